"""copytruncate races the torture test found: content must be read once, live or after a restart.

1. A new file appears at the path while logrotate has copied it but not yet
   truncated it: the copy starts with the file's bytes and is where its
   content goes on, not an unseen rotated file.
2. We read lines written between logrotate's copy and its truncate: the copy
   ends before our offset, holds nothing new, and must not be read again.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from acceptmon.clock import ManualClock
from acceptmon.sources.local import LocalSource

WAIT = 5.0
#: Longer than the 1 KiB fingerprint, so a copy can be recognised by it.
A1 = "a1 " + "x" * 1100


class Harness:
    """One followed log; ``restart`` simulates a crash resumed from the last checkpoint."""

    def __init__(self, tmp: Path, first: str) -> None:
        self.tmp, self.log, self.clock = tmp, tmp / "x.log", ManualClock()
        self.log.write_text(first)
        self.src = self._new()
        self.got = self.drain()

    def _new(self) -> LocalSource:
        return LocalSource("app", str(self.log), clock=self.clock, rotate_wait=WAIT)

    def drain(self) -> list[str]:
        out: list[str] = []
        while chunks := self.src.poll():
            for c in chunks:
                out += c.lines
                self.src.commit(c)
        return out

    def restart(self) -> None:
        state = self.src.checkpoint()
        self.src.close()
        self.src = self._new()
        self.src.restore(state)

    def read(self) -> None:
        self.got += self.drain()
        self.clock.advance(WAIT)
        self.got += self.drain()

    def rename_rotation(self, then: str) -> None:
        if (self.tmp / "x.log.1").exists():
            os.rename(self.tmp / "x.log.1", self.tmp / "x.log.2")
        os.rename(self.log, self.tmp / "x.log.1")
        self.log.write_text(then)

    def append(self, text: str) -> None:
        with open(self.log, "a") as f:
            f.write(text)


@pytest.mark.parametrize("restart", [False, True], ids=["live", "after-restart"])
def test_copy_of_a_new_file_before_its_truncate_is_not_read_twice(tmp_path: Path, restart: bool) -> None:
    h = Harness(tmp_path, "a1\n")
    if restart:
        h.restart()
    h.rename_rotation("b1\nb2\n")
    os.rename(tmp_path / "x.log.1", tmp_path / "x.log.2")
    shutil.copyfile(h.log, tmp_path / "x.log.1")  # copied, not yet truncated
    h.read()
    os.truncate(h.log, 0)
    h.append("c1\n")
    h.read()
    assert h.got == ["a1", "b1", "b2", "c1"]
    assert h.src.health().open_files == 1


@pytest.mark.parametrize("restart", [False, True], ids=["live", "after-restart"])
def test_copy_ending_before_our_offset_is_not_read_again(tmp_path: Path, restart: bool) -> None:
    h = Harness(tmp_path, f"{A1}\n")
    shutil.copyfile(h.log, tmp_path / "x.log.1")
    h.append("a2\n")  # after the copy, before the truncate: in no file afterwards
    h.got += h.drain()
    if restart:
        h.restart()
    os.truncate(h.log, 0)
    h.append("b1\n")
    h.read()
    h.rename_rotation("c1\n")
    h.read()
    assert h.got == [A1, "a2", "b1", "c1"]


@pytest.mark.parametrize("where", ["current", "rotated-away"])
def test_refill_after_truncate_between_look_and_read_is_not_taken_for_old_content(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """copytruncate while we are behind, and the writer refills the file past our
    offset before our next read: what we read there is the new content, not the rest of
    the old. The torture test met it on a loaded machine (counted lines equal to the
    files', verify rounds not): the rest of the old content must come from the copy and
    the new content from its start, each once."""
    import acceptmon.sources.tail.localfs as localfs_mod

    log = tmp_path / "x.log"
    old = [f"old {i:03d} " + "o" * 40 for i in range(200)]
    new = [f"new {i:03d} " + "n" * 40 for i in range(200)]
    log.write_text("".join(line + "\n" for line in old))
    clock = ManualClock()
    src = LocalSource("app", str(log), clock=clock, rotate_wait=WAIT, read_size=2048, poll_bytes=2048)
    got = [line for c in src.poll() for line in c.lines]
    assert 0 < len(got) < len(old)  # behind: the rest of the old content is unread
    if where == "rotated-away":
        os.rename(log, tmp_path / "x.log.1")
        log.write_text("")
        target = tmp_path / "x.log.1"
    else:
        target = log
    real_pread = os.pread
    done = False

    def pread(fd: int, n: int, offset: int) -> bytes:
        nonlocal done
        if not done and offset > 0 and os.fstat(fd).st_ino == os.stat(target).st_ino:
            done = True  # logrotate strikes between the look and this read
            copy = tmp_path / ("x.log.2" if where == "rotated-away" else "x.log.1")
            shutil.copyfile(target, copy)
            os.truncate(target, 0)
            with open(target, "a") as f:
                f.write("".join(line + "\n" for line in new))
        return real_pread(fd, n, offset)

    monkeypatch.setattr(localfs_mod.os, "pread", pread)
    for _ in range(50):
        got += [line for c in src.poll() for line in c.lines]
        clock.advance(WAIT)
    assert done
    assert sorted(got) == sorted(old + new), (len(got), [g for g in got if g not in old + new][:3])
    src.close()
