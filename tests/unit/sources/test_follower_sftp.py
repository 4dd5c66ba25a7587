"""The one follower (tail/follower.py) over the in-memory SFTP-like filesystem: no inodes,
whole-second mtimes. Moved from the SSH follower's tests (ssh/test_follow.py) when
``SSHSource`` came to follow through it: rotation, truncation, restore, budgets,
reconnects, and what the model test found over SFTP."""

from __future__ import annotations

import logging

import pytest

from acceptmon.clock import ManualClock
from acceptmon.model import Position
from acceptmon.sources.health import SourceEvents
from acceptmon.sources.lines import MAX_LINE_BYTES
from acceptmon.sources.ssh.reattach import ReattachingFS
from acceptmon.sources.tail.follower import FollowSettings, PathFollower
from acceptmon.sources.tail.fs import DirEntry, FileSystem
from tests.support.fakefs import FakeFS, FakeHandle, Inode

LOG = "/var/log/app.log"


class Events(SourceEvents):
    def __init__(self) -> None:
        super().__init__("t", logging.getLogger("test"))
        self.losses = 0

    def lost(self, detail: str) -> None:
        self.losses += 1
        super().lost(detail)


class Tail:
    """A ``PathFollower`` stepped as ``SSHSource`` steps it, every chunk committed at once."""

    def __init__(self, fs: FileSystem, clock: ManualClock, *, budget: int = 1 << 30) -> None:
        self.clock = clock
        self.budget = budget
        self.events = Events()
        cfg = FollowSettings("t", fs, clock, 32 * 1024, 0.5, MAX_LINE_BYTES)
        self.f = PathFollower(LOG, cfg, self.events)
        self.lines: list[str] = []
        self.ends: list[Position] = []

    def step(self) -> bool:
        self.f.look()
        got, used = self.f.read(self.budget)
        for chunk, s, lineno in got:
            assert chunk.end is not None
            self.lines += chunk.lines
            self.ends.append(chunk.end)
            s.committed, s.committed_lineno = chunk.end.offset, lineno
        self.f.prune()
        return used >= self.budget > 0

    def settle(self, rounds: int = 20) -> None:
        """Step like the worker would, letting manual time pass between idle steps."""
        for _ in range(rounds):
            if not self.step():
                self.clock.advance(0.3)


@pytest.fixture
def env() -> tuple[FakeFS, Tail]:
    fs = FakeFS()
    fs.mkdir("/var/log")
    return fs, Tail(fs, ManualClock())


def nums(n: int, m: int) -> list[str]:
    return [f"line {i}" for i in range(n, m + 1)]


def test_partial_line_is_held_until_its_newline(env) -> None:
    fs, t = env
    fs.append(LOG, "line 1", "line 2")
    fs.append(LOG, "half", end="")
    t.settle()
    assert t.lines == nums(1, 2)
    fs.append(LOG, " done")
    t.settle()
    assert t.lines == [*nums(1, 2), "half done"]
    assert t.ends[-1].offset == len(fs.files[LOG].data)


@pytest.mark.parametrize("method", ["rename", "copytruncate"])
def test_rotation_finishes_old_content_then_reads_new_from_zero(env, method: str) -> None:
    fs, t = env
    fs.append(LOG, *nums(1, 3))
    t.settle()
    fs.append(LOG, "line 4")
    getattr(fs, method)(LOG, f"{LOG}.1")
    fs.append(LOG, "line 5")
    t.settle()
    assert t.lines == nums(1, 5)
    # As locally: a rename is a rotation, a copytruncate truncates the file we read.
    assert (t.events.rotations, t.events.truncations) == ((1, 0) if method == "rename" else (0, 1))


def test_several_rotations_while_away_are_read_in_age_order(env) -> None:
    fs, t = env
    fs.append(LOG, *nums(1, 2))
    t.settle()
    fs.append(LOG, "line 3")
    fs.rename(LOG, f"{LOG}.1")
    fs.append(LOG, "line 4")
    fs.rename(f"{LOG}.1", f"{LOG}.2")
    fs.copytruncate(LOG, f"{LOG}.1")
    fs.append(LOG, "line 5")
    fs.append(f"{LOG}.3.gz", "compressed junk")
    t.settle()
    assert t.lines == nums(1, 5)


def test_rotated_file_still_being_copied_is_not_finished_early(env) -> None:
    fs, t = env
    fs.append(LOG, *nums(1, 2))
    t.settle()
    fs.append(LOG, "line 3")
    fs.copytruncate(LOG, f"{LOG}.1")
    full = bytes(fs.files[f"{LOG}.1"].data)
    fs.files[f"{LOG}.1"].data = bytearray(full[:16])  # logrotate is still copying
    for _ in range(4):
        t.step()
        t.clock.advance(0.1)
    fs.files[f"{LOG}.1"].data = bytearray(full)
    fs.append(LOG, "line 4")
    t.settle()
    assert t.lines == nums(1, 4)


def test_in_place_truncation_rereads_from_start(env) -> None:
    fs, t = env
    fs.append(LOG, *nums(1, 3))
    t.settle()
    fs.files[LOG].data.clear()
    fs.append(LOG, "line 4")
    t.settle()
    assert t.lines == nums(1, 4)
    assert (t.events.rotations, t.events.truncations) == (0, 1)


def test_same_size_replacement_is_caught_by_the_fingerprint(env) -> None:
    fs, t = env
    fs.append(LOG, "aaaa")
    t.settle()
    fs.files[LOG] = Inode(bytearray(b"bbbb\ncccc\n"), fs.now_ns + 10**9)
    t.settle()
    assert t.lines == ["aaaa", "bbbb", "cccc"]


def test_restore_resumes_exactly_even_after_rotation(env) -> None:
    fs, t = env
    fs.append(LOG, *nums(1, 3))
    t.settle()
    state = t.f.state()
    fs.append(LOG, "line 4")
    fs.rename(LOG, f"{LOG}.1")
    fs.append(LOG, "line 5")
    again = Tail(fs, t.clock)
    again.f.resume(state)
    again.settle()
    assert again.lines == nums(4, 5)


def test_a_replaced_file_is_finished_through_its_handle_then_the_path_read_from_start(env) -> None:
    """Deleted and recreated: the old file's handle still reads it (a POSIX sftp-server's
    does), so nothing is lost; the SSH follower, which reopened by path, reported it lost."""
    fs, t = env
    fs.append(LOG, *nums(1, 2))
    t.settle()
    del fs.files[LOG]
    fs.append(LOG, *nums(7, 9))
    t.settle()
    assert t.lines == [*nums(1, 2), *nums(7, 9)]


def test_a_missing_path_is_a_status_for_the_source_to_count(env) -> None:
    _, t = env
    t.step()
    assert t.f.status == "missing"


def test_a_budget_bounds_each_step() -> None:
    fs, clock = FakeFS(), ManualClock()
    t = Tail(fs, clock, budget=0)
    fs.append(LOG, *nums(1, 1000))
    t.settle()
    assert t.lines == []
    t.budget = 100
    t.step()
    assert 0 < len(t.lines) < 20
    t.budget = 1 << 30
    t.settle()
    assert t.lines == nums(1, 1000)


def test_after_a_reconnect_the_open_file_is_found_again_and_its_partial_line_finished() -> None:
    fs, clock = FakeFS(), ManualClock()
    rfs = ReattachingFS()
    rfs.bind(fs, lambda: not fs.down)
    t = Tail(rfs, clock)
    fs.append(LOG, "line 1")
    fs.append(LOG, "par", end="")
    t.settle()
    fs.cut_in = 1
    with pytest.raises(Exception, match="connection"):
        t.step()
    assert fs.open_handles == 0  # the server forgot every handle
    fs.down = False
    rfs.reconnected()
    fs.append(LOG, "tial")
    t.settle()
    assert t.lines == ["line 1", "partial"]


def test_after_a_reconnect_a_file_renamed_meanwhile_is_found_under_its_new_name() -> None:
    fs, clock = FakeFS(), ManualClock()
    rfs = ReattachingFS()
    rfs.bind(fs, lambda: not fs.down)
    t = Tail(rfs, clock)
    fs.append(LOG, "line 1")
    t.settle()
    fs.cut_in = 1
    with pytest.raises(Exception, match="connection"):
        t.step()
    fs.down = False
    fs.append(LOG, "line 2")
    fs.rename(LOG, f"{LOG}.1")
    fs.append(LOG, "line 3")  # the same size and second as "line 1" had: only a full look tells
    rfs.reconnected()
    t.f.distrust()  # as SSHSource.reconnected does
    t.settle()
    assert t.lines == nums(1, 3)


# -- found by the model test (tests/unit/sources/test_local_model.py, target "sftp") ------


def test_file_rotated_through_the_path_before_we_read_it_is_read_but_older_ones_are_not(env) -> None:
    fs, t = env
    fs.append(f"{LOG}.1", "history")
    t.step()  # nothing at the path yet: what is rotated now is history
    fs.append(LOG, *nums(1, 2))
    fs.rename(f"{LOG}.1", f"{LOG}.2")
    fs.rename(LOG, f"{LOG}.1")
    fs.append(LOG, "line 3")
    t.settle()
    assert t.lines == nums(1, 3)


def test_newer_rotated_file_is_read_while_the_path_stays_gone(env) -> None:
    fs, t = env
    fs.append(LOG, "line 1")
    t.settle()
    fs.rename(LOG, f"{LOG}.1")
    fs.append(LOG, "line 2")
    fs.rename(f"{LOG}.1", f"{LOG}.2")
    fs.rename(LOG, f"{LOG}.1")  # and no new file at the path
    t.settle()
    assert t.lines == nums(1, 2)


def test_same_size_rewrite_within_the_second_of_our_look_is_still_seen(env) -> None:
    fs, t = env
    fs.append(LOG, "aaaa")
    t.settle(rounds=2)  # read it, then one look that finds nothing new
    fs.now_ns += 100_000_000  # the same whole second as that look: the stat cannot tell
    fs.rename(LOG, f"{LOG}.1")
    fs.append(LOG, "bbbb")
    assert fs.stat(LOG) == fs.stat(f"{LOG}.1")
    t.settle()
    assert t.lines == ["aaaa", "bbbb"]


class UnlistableFS(FakeFS):
    def listdir(self, path: str, want: object = None) -> list[DirEntry]:
        raise PermissionError(13, "Permission denied", path)


def test_a_log_in_a_directory_we_may_not_list_is_still_read() -> None:
    fs = UnlistableFS()
    t = Tail(fs, ManualClock())
    fs.append(LOG, *nums(1, 2))
    t.settle()
    assert t.lines == nums(1, 2)


class CountingFS(FakeFS):
    def __init__(self) -> None:
        super().__init__()
        self.opened: list[str] = []

    def open(self, path: str) -> FakeHandle:
        self.opened.append(path)
        return super().open(path)


def test_history_is_opened_once_while_the_path_is_missing() -> None:
    fs = CountingFS()
    t = Tail(fs, ManualClock())
    fs.append(f"{LOG}.1", "history")
    for _ in range(10):
        t.step()
    assert fs.opened.count(f"{LOG}.1") <= 2
    fs.append(LOG, "line 1")
    t.settle()
    assert t.lines == ["line 1"]


def test_after_an_in_place_truncation_files_rotated_since_are_read(env) -> None:
    fs, t = env
    fs.append(LOG, "line 1")
    t.settle()
    fs.now_ns += 10**9  # as the follower's clock moved on
    fs.create(f"{LOG}.1")  # copytruncate's copy, cut before it copied anything ...
    fs.truncate(LOG)  # ... so "line 1" is in no file now
    fs.append(LOG, "line 2")
    fs.rename(f"{LOG}.1", f"{LOG}.2")
    fs.rename(LOG, f"{LOG}.1")
    fs.append(LOG, "line 3")
    t.settle()
    assert t.lines == nums(1, 3)


def test_after_reading_past_the_end_of_a_copy_newer_rotated_files_are_read(env) -> None:
    fs, t = env
    fs.append(LOG, "line 1")
    fs.create(f"{LOG}.1", fs.read(LOG))  # copytruncate's copy ...
    fs.append(LOG, "lost 1")  # ... the writer goes on ...
    t.settle()
    fs.truncate(LOG)  # ... the truncate: "lost 1" is in no file now
    fs.rename(f"{LOG}.1", f"{LOG}.2")
    fs.append(LOG, "line 2")
    fs.rename(LOG, f"{LOG}.1")
    fs.append(LOG, "line 3")
    t.settle()
    assert t.lines == ["line 1", "lost 1", "line 2", "line 3"]


def test_a_copy_cut_short_of_the_fingerprint_is_still_our_file() -> None:
    fs = FakeFS()
    t = Tail(fs, ManualClock(), budget=16)
    fs.append(LOG, *nums(10, 30))
    t.step()  # adopts the file and reads a few lines; the fingerprint covers the whole head
    assert 0 < len(t.lines) < 5
    copied = fs.read(LOG)[:100]  # copytruncate's copy ends here (the writer kept writing) ...
    fs.create(f"{LOG}.1", copied)
    fs.truncate(LOG)  # ... and the rest is in no file now
    fs.now_ns += 10**9
    fs.append(LOG, "line 99")
    t.budget = 1 << 30
    t.settle()
    whole = copied.decode().split("\n")[:-1]
    assert t.lines[: len(whole)] == whole
    # The copy's unterminated end is handed out when the copy is closed, as locally:
    # the new file's lines may come before it.
    assert t.lines[len(whole) :] in (["line 99", "line"], ["line", "line 99"])


def test_a_finished_file_that_vanishes_is_not_read_again_and_newer_files_are(env) -> None:
    fs, t = env
    fs.append(LOG, "line 1")
    t.settle()
    fs.rename(LOG, f"{LOG}.1")  # rotated, and no new file yet
    t.settle()
    fs.delete(f"{LOG}.1")  # compressed away after we finished it
    fs.append(f"{LOG}.2.gz", "compressed")
    t.settle()
    fs.append(LOG, "line 2")
    t.settle()
    assert t.lines == nums(1, 2)
    assert t.events.losses == 0
