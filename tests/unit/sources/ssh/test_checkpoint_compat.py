"""SSH checkpoints as acceptmon wrote them (up to 562a699) must resume without a line lost or repeated.

The documents below are spelled out key by key, as ``SSHSource.checkpoint``
wrote them: ``url``, ``version``, one entry per path under ``files``, and the
rotated heads that were history under ``known`` (older ones had no
``version``). Whatever shape a later follower writes, these must still read.
Today's documents have the local shape (``ssh_files_of`` maps the old one to it).
"""

from __future__ import annotations

from typing import Any

import pytest

from acceptmon.sources.rotation import fingerprint
from acceptmon.sources.tail.entry import ssh_files_of
from acceptmon.sources.tail.fs import HeadHash
from tests.support.fakefs import FakeFS
from tests.unit.sources.ssh.test_source import LOG, drive, make

FIRST = b"2026-12-01 a\n2026-12-01 b\n"
HISTORY = b"2026-11-30 old\n"


def doc(*, versioned: bool = True, known: bool = True) -> dict[str, Any]:
    """What today's code checkpoints after reading ``FIRST`` with ``HISTORY`` rotated beside it."""
    fp = fingerprint(FIRST)
    out: dict[str, Any] = {
        "url": f"ssh://gpu1{LOG}",
        "files": {
            LOG: {
                "identity": str(HeadHash.of(fp)),
                "offset": len(FIRST),
                "lineno": 3,
                "fingerprint": fp,
                "fp_len": len(FIRST),
                "real": LOG,
            }
        },
    }
    if versioned:
        out["version"] = 1
    if known:
        out["known"] = {LOG: [[fingerprint(HISTORY), len(HISTORY)]]}
    return out


def disk() -> FakeFS:
    fs = FakeFS()
    fs.write(f"{LOG}.1", HISTORY)
    fs.write(LOG, FIRST)
    return fs


def resume(fs: FakeFS, state: dict[str, Any]) -> list[str]:
    src, _, clock = make()
    src.restore(state)
    src.host_state(True, "", "")
    lines: list[str] = []
    for _ in range(5):
        lines += drive(src, fs, clock)
        clock.advance(1)
    return lines


def test_today_writes_these_documents_in_the_one_shape() -> None:
    """What up to 562a699 wrote as ``doc()`` is now written in the local shape, and maps to it without loss."""
    fs = disk()
    src, _, clock = make()
    fs.files[LOG].data.clear()  # started before the first line, with HISTORY already rotated
    assert drive(src, fs, clock) == []
    fs.write(LOG, FIRST)
    assert drive(src, fs, clock) == ["2026-12-01 a", "2026-12-01 b"]
    history = [fingerprint(HISTORY), len(HISTORY)]
    (entry,) = doc()["files"].values()
    files = {LOG: {"done": {str(HeadHash.of(history[0])): history}, "streams": [entry]}}
    assert ssh_files_of(doc()) == ssh_files_of(doc(versioned=False)) == files
    now = src.checkpoint()
    assert (
        now.keys() == {"url", "version", "files"} and now["url"] == f"ssh://gpu1{LOG}" and now["version"] == 1
    )
    (written,) = now["files"][LOG]["streams"]  # the shared follower's entry adds mtime_ns and marks
    assert now["files"][LOG]["done"] == files[LOG]["done"] and written.items() >= entry.items()


@pytest.mark.parametrize("versioned", [True, False], ids=["versioned", "unversioned"])
def test_resumes_where_it_left_off(versioned: bool) -> None:
    fs = disk()
    fs.write(LOG, b"2026-12-01 c\n")
    assert resume(fs, doc(versioned=versioned)) == ["2026-12-01 c"]


@pytest.mark.parametrize("how", ["rename", "copytruncate"])
def test_rotation_while_down_finishes_the_old_file_then_reads_the_new(how: str) -> None:
    fs = disk()
    fs.write(LOG, b"2026-12-01 c\n")
    fs.rename(f"{LOG}.1", f"{LOG}.2")
    if how == "rename":
        fs.rename(LOG, f"{LOG}.1")
    else:
        fs.copytruncate(LOG, f"{LOG}.1")
    fs.write(LOG, b"2026-12-02 d\n")
    assert resume(fs, doc()) == ["2026-12-01 c", "2026-12-02 d"]


def test_todays_documents_resume_as_the_old_ones_do() -> None:
    fs = disk()
    fs.write(LOG, b"2026-12-01 c\n")
    state = {"url": f"ssh://gpu1{LOG}", "version": 1, "files": ssh_files_of(doc())}
    assert resume(fs, state) == ["2026-12-01 c"]


def test_history_stays_history_when_the_file_is_gone() -> None:
    """The checkpointed file was deleted while down: what is newer is read, the known history is not."""
    fs = disk()
    fs.delete(LOG)
    fs.write(LOG, b"2026-12-02 d\n")
    assert resume(fs, doc()) == ["2026-12-02 d"]
