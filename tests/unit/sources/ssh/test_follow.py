"""Follower over the in-memory SFTP-like filesystem (tests/support/fakefs.py): rotation, truncation, restore, back-pressure."""

from __future__ import annotations

import pytest

from acceptmon.clock import ManualClock
from acceptmon.model import Position
from acceptmon.sources.ssh.follow import Cursor, Follower, Known
from acceptmon.sources.tail.entry import Entry
from acceptmon.sources.tail.fs import DirEntry
from tests.support.fakefs import FakeFS, FakeHandle, Inode

LOG = "/var/log/app.log"


class Collector:
    def __init__(self, room: int = 1 << 30) -> None:
        self.lines: list[str] = []
        self.ends: list[tuple[Position, Entry]] = []
        self.notes: list[str] = []
        self.capacity = room

    def room(self) -> int:
        return self.capacity - sum(len(x) + 1 for x in self.lines)

    def emit(self, path: str, lines: list[str], lineno: int, end: Position, cursor: Cursor) -> None:
        self.lines.extend(lines)
        self.ends.append((end, cursor.entry()))

    def note(self, event: str, detail: str) -> None:
        self.notes.append(event)

    def known(self, path: str, heads: Known) -> None:
        self.known_heads = heads


@pytest.fixture
def env() -> tuple[FakeFS, Collector, ManualClock, Follower]:
    fs, sink, clock = FakeFS(), Collector(), ManualClock()
    return fs, sink, clock, Follower(LOG, sink, clock, settle=0.5)


def settle(follower: Follower, fs: FakeFS, clock: ManualClock, rounds: int = 20) -> None:
    """Step like the worker would, letting manual time pass between idle steps."""
    for _ in range(rounds):
        if not follower.step(fs):
            clock.advance(0.3)


def nums(n: int, m: int) -> list[str]:
    return [f"line {i}" for i in range(n, m + 1)]


def test_partial_line_is_held_until_its_newline(env) -> None:
    fs, sink, clock, f = env
    fs.append(LOG, "line 1", "line 2")
    fs.append(LOG, "half", end="")
    settle(f, fs, clock)
    assert sink.lines == nums(1, 2)
    fs.append(LOG, " done")
    settle(f, fs, clock)
    assert sink.lines == [*nums(1, 2), "half done"]
    assert sink.ends[-1][0].offset == len(fs.files[LOG].data)


@pytest.mark.parametrize("method", ["rename", "copytruncate"])
def test_rotation_finishes_old_content_then_reads_new_from_zero(env, method: str) -> None:
    fs, sink, clock, f = env
    fs.append(LOG, *nums(1, 3))
    settle(f, fs, clock)
    fs.append(LOG, "line 4")
    getattr(fs, method)(LOG, f"{LOG}.1")
    fs.append(LOG, "line 5")
    settle(f, fs, clock)
    assert sink.lines == nums(1, 5)
    assert sink.notes == ["rotation"]


def test_several_rotations_while_away_are_read_in_age_order(env) -> None:
    fs, sink, clock, f = env
    fs.append(LOG, *nums(1, 2))
    settle(f, fs, clock)
    fs.append(LOG, "line 3")
    fs.rename(LOG, f"{LOG}.1")
    fs.append(LOG, "line 4")
    fs.rename(f"{LOG}.1", f"{LOG}.2")
    fs.copytruncate(LOG, f"{LOG}.1")
    fs.append(LOG, "line 5")
    fs.append(f"{LOG}.3.gz", "compressed junk")
    settle(f, fs, clock)
    assert sink.lines == nums(1, 5)


def test_rotated_file_still_being_copied_is_not_finished_early(env) -> None:
    fs, sink, clock, f = env
    fs.append(LOG, *nums(1, 2))
    settle(f, fs, clock)
    fs.append(LOG, "line 3")
    fs.copytruncate(LOG, f"{LOG}.1")
    full = bytes(fs.files[f"{LOG}.1"].data)
    fs.files[f"{LOG}.1"].data = bytearray(full[:16])  # logrotate is still copying
    for _ in range(4):
        f.step(fs)
        clock.advance(0.1)
    fs.files[f"{LOG}.1"].data = bytearray(full)
    fs.append(LOG, "line 4")
    settle(f, fs, clock)
    assert sink.lines == nums(1, 4)


def test_in_place_truncation_rereads_from_start(env) -> None:
    fs, sink, clock, f = env
    fs.append(LOG, *nums(1, 3))
    settle(f, fs, clock)
    fs.files[LOG].data.clear()
    fs.append(LOG, "line 4")
    settle(f, fs, clock)
    assert sink.lines == nums(1, 4)
    assert sink.notes == ["truncation"]


def test_same_size_replacement_is_caught_by_the_fingerprint(env) -> None:
    fs, sink, clock, f = env
    fs.append(LOG, "aaaa")
    settle(f, fs, clock)
    fs.files[LOG] = Inode(bytearray(b"bbbb\ncccc\n"), fs.now_ns + 10**9)
    settle(f, fs, clock)
    assert sink.lines == ["aaaa", "bbbb", "cccc"]


def test_restore_resumes_exactly_even_after_rotation(env) -> None:
    fs, sink, clock, f = env
    fs.append(LOG, *nums(1, 3))
    settle(f, fs, clock)
    _, entry = sink.ends[-1]
    fs.append(LOG, "line 4")
    fs.rename(LOG, f"{LOG}.1")
    fs.append(LOG, "line 5")
    again = Collector()
    g = Follower(LOG, again, clock, settle=0.5)
    g.restore(entry)
    settle(g, fs, clock)
    assert again.lines == nums(4, 5)


def test_vanished_file_is_reported_and_the_path_read_from_start(env) -> None:
    fs, sink, clock, f = env
    fs.append(LOG, *nums(1, 2))
    settle(f, fs, clock)
    del fs.files[LOG]  # deleted (or compressed) and recreated, longer than our offset
    fs.append(LOG, *nums(7, 9))
    settle(f, fs, clock)
    assert sink.lines == [*nums(1, 2), *nums(7, 9)]
    assert "lost" in sink.notes


def test_missing_path_raises_for_the_caller_to_count(env) -> None:
    fs, _, _, f = env
    with pytest.raises(FileNotFoundError):
        f.step(fs)


def test_back_pressure_stops_reading_when_the_buffer_is_full() -> None:
    fs, clock = FakeFS(), ManualClock()
    sink = Collector(room=0)
    f = Follower(LOG, sink, clock)
    fs.append(LOG, *nums(1, 1000))
    settle(f, fs, clock)
    assert sink.lines == []
    sink.capacity = 100
    settle(f, fs, clock)
    assert 0 < len(sink.lines) < 20
    sink.capacity = 1 << 30
    settle(f, fs, clock)
    assert sink.lines == nums(1, 1000)


def test_resync_rereads_a_partial_line_after_reconnect(env) -> None:
    fs, sink, clock, f = env
    fs.append(LOG, "line 1")
    fs.append(LOG, "par", end="")
    settle(f, fs, clock)
    f.resync()
    fs.append(LOG, "tial")
    settle(f, fs, clock)
    assert sink.lines == ["line 1", "partial"]


# -- found by the model test (tests/unit/sources/test_local_model.py, target "sftp") ------


def step_through_missing_path(f: Follower, fs: FakeFS, clock: ManualClock, rounds: int = 20) -> None:
    """``settle``, counting a missing path as the source does (an error, not the end)."""
    for _ in range(rounds):
        try:
            more = f.step(fs)
        except FileNotFoundError:
            more = False
        if not more:
            clock.advance(0.3)


def test_file_rotated_through_the_path_before_we_read_it_is_read_but_older_ones_are_not(env) -> None:
    fs, sink, clock, f = env
    fs.append(f"{LOG}.1", "history")
    with pytest.raises(FileNotFoundError):
        f.step(fs)  # nothing at the path yet: what is rotated now is history
    fs.append(LOG, *nums(1, 2))
    fs.rename(f"{LOG}.1", f"{LOG}.2")
    fs.rename(LOG, f"{LOG}.1")
    fs.append(LOG, "line 3")
    settle(f, fs, clock)
    assert sink.lines == nums(1, 3)


def test_newer_rotated_file_is_read_while_the_path_stays_gone(env) -> None:
    fs, sink, clock, f = env
    fs.append(LOG, "line 1")
    settle(f, fs, clock)
    fs.rename(LOG, f"{LOG}.1")
    fs.append(LOG, "line 2")
    fs.rename(f"{LOG}.1", f"{LOG}.2")
    fs.rename(LOG, f"{LOG}.1")  # and no new file at the path
    step_through_missing_path(f, fs, clock)
    assert sink.lines == nums(1, 2)


def test_same_size_rewrite_within_the_second_of_our_look_is_still_seen(env) -> None:
    fs, sink, clock, f = env
    fs.append(LOG, "aaaa")
    settle(f, fs, clock, rounds=2)  # read it, then one look that finds nothing new
    fs.now_ns += 100_000_000  # the same whole second as that look: the stat cannot tell
    fs.rename(LOG, f"{LOG}.1")
    fs.append(LOG, "bbbb")
    assert fs.stat(LOG) == fs.stat(f"{LOG}.1")
    settle(f, fs, clock)
    assert sink.lines == ["aaaa", "bbbb"]


class UnlistableFS(FakeFS):
    def listdir(self, path: str) -> list[DirEntry]:
        raise PermissionError(13, "Permission denied", path)


def test_a_log_in_a_directory_we_may_not_list_is_still_read() -> None:
    fs, sink, clock = UnlistableFS(), Collector(), ManualClock()
    f = Follower(LOG, sink, clock)
    fs.append(LOG, *nums(1, 2))
    settle(f, fs, clock)
    assert sink.lines == nums(1, 2)


class CountingFS(FakeFS):
    def __init__(self) -> None:
        super().__init__()
        self.opened: list[str] = []

    def open(self, path: str) -> FakeHandle:
        self.opened.append(path)
        return super().open(path)


def test_history_is_opened_once_while_the_path_is_missing() -> None:
    fs, sink, clock = CountingFS(), Collector(), ManualClock()
    f = Follower(LOG, sink, clock)
    fs.append(f"{LOG}.1", "history")
    for _ in range(10):
        with pytest.raises(FileNotFoundError):
            f.step(fs)
    assert fs.opened.count(f"{LOG}.1") <= 2
    fs.append(LOG, "line 1")
    settle(f, fs, clock)
    assert sink.lines == ["line 1"]


def test_after_an_in_place_truncation_files_rotated_since_are_read(env) -> None:
    fs, sink, clock, f = env
    fs.append(LOG, "line 1")
    settle(f, fs, clock)
    fs.now_ns += 10**9  # as the follower's clock moved on
    fs.create(f"{LOG}.1")  # copytruncate's copy, cut before it copied anything ...
    fs.truncate(LOG)  # ... so "line 1" is in no file now
    fs.append(LOG, "line 2")
    fs.rename(f"{LOG}.1", f"{LOG}.2")
    fs.rename(LOG, f"{LOG}.1")
    fs.append(LOG, "line 3")
    settle(f, fs, clock)
    assert sink.lines == nums(1, 3)


def test_after_reading_past_the_end_of_a_copy_newer_rotated_files_are_read(env) -> None:
    fs, sink, clock, f = env
    fs.append(LOG, "line 1")
    fs.create(f"{LOG}.1", fs.read(LOG))  # copytruncate's copy ...
    fs.append(LOG, "lost 1")  # ... the writer goes on ...
    settle(f, fs, clock)
    fs.truncate(LOG)  # ... the truncate: "lost 1" is in no file now
    fs.rename(f"{LOG}.1", f"{LOG}.2")
    fs.append(LOG, "line 2")
    fs.rename(LOG, f"{LOG}.1")
    fs.append(LOG, "line 3")
    settle(f, fs, clock)
    assert sink.lines == ["line 1", "lost 1", "line 2", "line 3"]


def test_a_copy_cut_short_of_the_fingerprint_is_still_our_file() -> None:
    fs, sink, clock = FakeFS(), Collector(), ManualClock()
    f = Follower(LOG, sink, clock, step_bytes=16)
    fs.append(LOG, *nums(10, 30))
    f.step(fs)  # adopts the file
    f.step(fs)  # a few lines read, but the fingerprint covers the whole head
    assert 0 < len(sink.lines) < 5
    copied = fs.read(LOG)[:100]  # copytruncate's copy ends here (the writer kept writing) ...
    fs.create(f"{LOG}.1", copied)
    fs.truncate(LOG)  # ... and the rest is in no file now
    fs.now_ns += 10**9
    fs.append(LOG, "line 99")
    settle(f, fs, clock)
    whole = copied.decode().split("\n")[:-1]
    assert sink.lines[: len(whole)] == whole
    assert sink.lines[-1] == "line 99"


def test_a_finished_file_that_vanishes_is_reported_once_then_newer_files_are_read(env) -> None:
    fs, sink, clock, f = env
    fs.append(LOG, "line 1")
    settle(f, fs, clock)
    fs.rename(LOG, f"{LOG}.1")  # rotated, and no new file yet
    step_through_missing_path(f, fs, clock)
    fs.delete(f"{LOG}.1")  # compressed away after we finished it
    fs.append(f"{LOG}.2.gz", "compressed")
    step_through_missing_path(f, fs, clock)
    fs.append(LOG, "line 2")
    settle(f, fs, clock)
    assert sink.lines == nums(1, 2)
    assert sink.notes.count("lost") == 1
