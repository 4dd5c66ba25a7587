"""What every ``FileSystem`` (``sources.tail.fs``) promises the follower, on each implementation.

The one follower may rely only on these: a handle stays bound to the file it
opened, identity comes from the filesystem (``DevInode`` in a stat where there
are inodes, else the ``HeadHash`` of the handle's head), and mtimes are exact
only to ``mtime_resolution_ns``. Run on ``LocalFS`` over real files and on the
in-memory filesystem with local and with SFTP semantics.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from acceptmon.sources.rotation import FINGERPRINT_BYTES, fingerprint
from acceptmon.sources.tail.fs import DevInode, FileSystem, HeadHash
from acceptmon.sources.tail.localfs import LocalFS
from tests.support.fakefs import FakeFS


class Disk:
    """The writer's side of one of the filesystems under test."""

    def __init__(self, fs: FileSystem, root: str, fake: FakeFS | None) -> None:
        self.fs, self.root, self.fake = fs, root, fake

    def write(self, name: str, data: bytes) -> None:
        if self.fake is not None:
            self.fake.write(f"{self.root}/{name}", data)
        else:
            with open(f"{self.root}/{name}", "ab") as f:
                f.write(data)

    def rename(self, a: str, b: str) -> None:
        if self.fake is not None:
            self.fake.rename(f"{self.root}/{a}", f"{self.root}/{b}")
        else:
            os.rename(f"{self.root}/{a}", f"{self.root}/{b}")

    def path(self, name: str) -> str:
        return f"{self.root}/{name}"


@pytest.fixture(params=["local", "fake-inodes", "fake-sftp"])
def disk(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Disk]:
    if request.param == "local":
        yield Disk(LocalFS(), str(tmp_path), None)
        return
    fake = FakeFS(inodes=request.param == "fake-inodes")
    fake.mkdir("/logs")
    yield Disk(fake, "/logs", fake)
    assert fake.open_handles == 0


def test_a_handle_stays_bound_to_its_file_across_rename(disk: Disk) -> None:
    disk.write("x.log", b"old\n")
    h = disk.fs.open(disk.path("x.log"))
    disk.rename("x.log", "x.log.1")
    disk.write("x.log", b"new file\n")
    disk.write("x.log.1", b"more\n")
    assert h.read_at(0, 100) == b"old\nmore\n"
    assert h.size() == h.stat().size == 9
    h.close()


def test_identity_comes_from_the_filesystem(disk: Disk) -> None:
    disk.write("x.log", b"head\n")
    h = disk.fs.open(disk.path("x.log"))
    st = disk.fs.stat(disk.path("x.log"))
    if st.identity is not None:
        assert isinstance(st.identity, DevInode)
        assert h.identity() == h.stat().identity == st.identity
    else:
        assert h.identity() == HeadHash.of(fingerprint(b"head\n"))
        disk.write("x.log", b"x" * FINGERPRINT_BYTES)
        assert h.identity() == HeadHash.of(
            fingerprint((b"head\n" + b"x" * FINGERPRINT_BYTES)[:FINGERPRINT_BYTES])
        )
    h.close()


def test_mtimes_are_whole_ticks_of_the_resolution(disk: Disk) -> None:
    disk.write("x.log", b"a\n")
    tick = disk.fs.mtime_resolution_ns
    assert tick >= 1
    assert disk.fs.stat(disk.path("x.log")).mtime_ns % tick == 0
    assert all(e.mtime_ns % tick == 0 for e in disk.fs.listdir(disk.root))


def test_coarse_mtimes_hide_a_same_size_rewrite_within_a_tick() -> None:
    """Why the resolution is the filesystem's to tell: over SFTP the stat cannot see this."""
    fs = FakeFS()
    fs.write("/logs/x.log", b"aaaa\n")
    before = fs.stat("/logs/x.log")
    fs.now_ns += fs.mtime_resolution_ns // 10
    fs.rename("/logs/x.log", "/logs/x.log.1")
    fs.write("/logs/x.log", b"bbbb\n")
    assert fs.stat("/logs/x.log") == before
