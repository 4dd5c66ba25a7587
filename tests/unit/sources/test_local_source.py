"""LocalSource against real files in tmp_path: one test per situation, no sleeps."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from acceptmon.clock import ManualClock
from acceptmon.model import Chunk
from acceptmon.sources.local import LocalSource
from acceptmon.sources.tail.localfs import LocalFS, default_opener

WAIT = 5.0


def make(pattern: Path | str, clock: ManualClock | None = None, **kw) -> LocalSource:
    return LocalSource("app", str(pattern), clock=clock or ManualClock(), rotate_wait=WAIT, **kw)


def drain(src: LocalSource, commit: bool = True) -> list[str]:
    """Poll until nothing more comes; return the lines, committing each chunk."""
    out: list[str] = []
    while chunks := src.poll():
        for c in chunks:
            out += c.lines
            if commit:
                src.commit(c)
    return out


def write(path: Path, text: str) -> None:
    with open(path, "a") as f:
        f.write(text)


def test_growth_reports_lines_positions_and_path(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_text("a\nb\n")
    src = make(log)
    [c] = src.poll()
    assert (c.source, c.lines, c.lineno, c.path) == ("app", ("a", "b"), 1, str(log))
    assert c.end is not None and c.end.offset == 4
    assert c.end.identity == f"{os.stat(log).st_dev}:{os.stat(log).st_ino}"
    assert src.poll() == []
    write(log, "c\n")
    [c] = src.poll()
    assert (c.lines, c.lineno, c.end.offset if c.end else None) == (("c",), 3, 6)
    assert src.health().bytes_read == 6


def test_partial_last_line_is_held_until_its_newline(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_text("a\nhal")
    src = make(log)
    [c] = src.poll()
    assert c.lines == ("a",) and c.end is not None and c.end.offset == 2
    write(log, "f\n")
    assert drain(src) == ["half"]


def test_rename_rotation_drains_old_file_first_then_closes_it(tmp_path: Path) -> None:
    clock = ManualClock()
    log = tmp_path / "x.log"
    log.write_text("a1\n")
    src = make(log, clock)
    assert drain(src) == ["a1"]
    write(log, "a2\n")
    os.rename(log, tmp_path / "x.log.1")
    log.write_text("b1\n")
    assert drain(src) == ["a2", "b1"]
    assert (src.health().rotations, src.health().open_files) == (1, 2)
    write(tmp_path / "x.log.1", "a3\n")  # a writer that has not reopened yet
    assert drain(src) == ["a3"]
    clock.advance(WAIT)
    assert drain(src) == [] and src.health().open_files == 1


def test_copytruncate_finishes_old_content_from_the_copy(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_text("a1 first line\n")
    src = make(log)
    assert drain(src) == ["a1 first line"]
    write(log, "a2\n")
    shutil.copyfile(log, tmp_path / "x.log.1")
    os.truncate(log, 0)
    write(log, "b1\n")
    assert drain(src) == ["a2", "b1"]
    assert src.health().truncations == 1


def test_copytruncate_regrown_past_old_offset_is_caught_by_fingerprint(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_text("a1 first line\n")
    src = make(log)
    assert drain(src) == ["a1 first line"]
    shutil.copyfile(log, tmp_path / "x.log-20261201")
    os.truncate(log, 0)
    new = [f"b{i} second generation" for i in range(5)]
    write(log, "".join(line + "\n" for line in new))
    assert drain(src) == new
    assert src.health().truncations == 1


def test_truncation_without_a_copy_reads_the_new_content(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_text("a1 first line\na2\n")
    src = make(log)
    drain(src)
    os.truncate(log, 0)
    write(log, "b1\n")
    assert drain(src) == ["b1"]
    assert src.health().truncations == 1


def test_delete_and_recreate_reads_rest_of_deleted_file_then_new(tmp_path: Path) -> None:
    clock = ManualClock()
    log = tmp_path / "x.log"
    log.write_text("a1\n")
    src = make(log, clock)
    drain(src)
    write(log, "a2\n")
    os.unlink(log)
    assert drain(src) == ["a2"] and not src.health().up
    log.write_text("b1\n")
    assert drain(src) == ["b1"] and src.health().up
    clock.advance(WAIT)
    drain(src)
    assert src.health().open_files == 1


def test_same_inode_with_new_content_is_read_from_the_start(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_text("old content line\n")
    src = make(log)
    drain(src)
    with open(log, "r+") as f:  # same dev:ino, other bytes: what inode reuse looks like
        f.write("NEW content line\nnew 2\n")
    assert drain(src) == ["NEW content line", "new 2"]


def test_missing_file_is_down_until_it_appears(tmp_path: Path) -> None:
    log = tmp_path / "later.log"
    src = make(log)
    assert src.poll() == []
    assert not src.health().up and src.health().errors == ()
    log.write_text("hello\n")
    assert drain(src) == ["hello"] and src.health().up


def test_permission_denied_is_reported_once_and_recovers(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_text("secret\n")
    denied = True

    def opener(path: str) -> int:
        if denied:
            raise PermissionError(13, "Permission denied", path)
        return default_opener(path)

    src = make(log, fs=LocalFS(opener))
    assert src.poll() == [] and src.poll() == []
    h = src.health()
    assert not h.up and h.errors == (("permission_denied", 1),)
    assert str(log) in h.last_error
    denied = False
    assert drain(src) == ["secret"] and src.health().up


def test_symlink_is_followed_and_re_resolved_when_it_changes(tmp_path: Path) -> None:
    (tmp_path / "t1.log").write_text("one\n")
    (tmp_path / "t2.log").write_text("two\n")
    link = tmp_path / "current.log"
    link.symlink_to(tmp_path / "t1.log")
    src = make(link)
    assert drain(src) == ["one"]
    write(tmp_path / "t1.log", "one more\n")
    (tmp_path / "tmp.link").symlink_to(tmp_path / "t2.log")
    os.replace(tmp_path / "tmp.link", link)
    assert drain(src) == ["one more", "two"]
    assert str(tmp_path) in src.watch_dirs()


def test_glob_picks_up_new_files_and_ignores_compressed_and_rotated(tmp_path: Path) -> None:
    clock = ManualClock()
    (tmp_path / "a.log").write_text("a\n")
    for name in ["a.log.1", "a.log.2.gz", "a.log.3.xz", "a.log.4.bz2", "a.log.5.zst", "a.log-20261201"]:
        (tmp_path / name).write_text("rotated\n")
    src = make(tmp_path / "*", clock)
    assert drain(src) == ["a"]
    (tmp_path / "b.log").write_text("b\n")
    clock.advance(10)  # the rescan backstop, whatever the directory mtime did
    chunks: list[Chunk] = src.poll()
    assert [(c.path, c.lines) for c in chunks] == [(str(tmp_path / "b.log"), ("b",))]
    assert {c.source for c in chunks} == {"app:b.log"}  # each file a glob matches is its own source


def test_file_renamed_within_the_glob_is_not_read_twice(tmp_path: Path) -> None:
    clock = ManualClock()
    (tmp_path / "a.log").write_text("a1\n")
    src = make(tmp_path / "*.log", clock)
    drain(src)
    write(tmp_path / "a.log", "a2\n")
    os.rename(tmp_path / "a.log", tmp_path / "b.log")
    clock.advance(10)
    assert drain(src) == ["a2"]


def test_start_at_end_skips_existing_lines_but_counts_them(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_text("old1\nold2\npart")
    src = make(log, from_beginning=False)
    assert src.poll() == []
    write(log, "ial\nnew\n")
    chunks = src.poll()
    assert [line for c in chunks for line in c.lines] == ["partial", "new"]
    assert chunks[0].lineno == 3


def test_overlong_lines_are_counted_not_returned(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_text("ok\n" + "x" * 100 + "\nfine\n")
    src = make(log, max_line=50)
    assert drain(src) == ["ok", "fine"]
    assert src.health().overlong_lines == 1


def test_lag_and_bounded_work_per_poll(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_text("".join(f"line {i:04d}\n" for i in range(1000)))  # 10 000 bytes
    src = make(log, read_size=1000, poll_bytes=2000)
    first = src.poll()
    assert sum(len(c.lines) for c in first) == 200
    assert src.health().lag_bytes == 8000
    assert len(drain(src)) == 800


def test_hole_of_nuls_left_by_copytruncate_is_skipped(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_text("before the rotation\n")
    src = make(log)
    drain(src)
    os.truncate(log, 0)
    with open(log, "r+b") as f:  # a writer without O_APPEND keeps its offset
        f.seek(200)
        f.write(b"after the hole\n")
    assert drain(src) == ["after the hole"]


@pytest.mark.parametrize("scheme", ["rename", "copytruncate"])
def test_resume_after_rotation_while_down(tmp_path: Path, scheme: str) -> None:
    log = tmp_path / "x.log"
    log.write_text("a1 first\n")
    src = make(log)
    assert drain(src) == ["a1 first"]
    state = src.checkpoint()
    src.close()
    write(log, "a2 unread\n")
    if scheme == "rename":
        os.rename(log, tmp_path / "x.log.1")
    else:
        shutil.copyfile(log, tmp_path / "x.log.1")
        os.truncate(log, 0)
    write(log, "b1 new file\n")
    again = make(log)
    again.restore(state)
    assert drain(again) == ["a2 unread", "b1 new file"]


def test_resume_after_several_rotations_while_down(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_text("a1\n")
    (tmp_path / "x.log.1").write_text("older, read before we started\n")
    src = make(log)
    drain(src)
    state = src.checkpoint()
    src.close()
    write(log, "a2\n")
    os.rename(tmp_path / "x.log.1", tmp_path / "x.log.3")
    os.rename(log, tmp_path / "x.log.2")
    (tmp_path / "x.log.1").write_text("b1\n")
    os.utime(tmp_path / "x.log.1", ns=(os.stat(tmp_path / "x.log.2").st_mtime_ns + 10**7,) * 2)
    log.write_text("c1\n")
    again = make(log)
    again.restore(state)
    assert drain(again) == ["a2", "b1", "c1"]


def test_checkpoint_holds_only_committed_positions(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_text("a\nb\n")
    src = make(log, read_size=2)
    first, second = src.poll()
    src.commit(first)
    state = src.checkpoint()
    [entry] = state["files"][str(log)]["streams"]
    assert (entry["offset"], entry["lineno"]) == (2, 2)
    again = make(log)
    again.restore(state)
    assert drain(again) == ["b"]
    assert second.lines == ("b",)


def test_restore_ignores_garbage(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_text("a\n")
    src = make(log)
    src.restore({"version": 1, "files": {str(log): {"streams": [{"identity": 3}], "done": "x"}}})
    assert drain(src) == ["a"]


def _hide_rotated_file_at_resume(tmp_path: Path) -> tuple[Path, Path, dict]:
    """A checkpoint in ``x.log``; then it rotates, and at restore time its file is
    out of sight (a listing racing logrotate's renames sees it under neither name)."""
    log = tmp_path / "x.log"
    log.write_text("a1 read\n")
    src = make(log)
    assert drain(src) == ["a1 read"]
    state = src.checkpoint()
    src.close()
    write(log, "a2 unread\n")
    os.rename(log, tmp_path / "x.log.1")
    log.write_text("b1 new file\n")
    away = tmp_path / "elsewhere"
    away.mkdir()
    os.rename(tmp_path / "x.log.1", away / "x.log.1")
    return log, away / "x.log.1", state


def test_a_file_resume_missed_is_read_from_its_offset_when_it_shows_up(tmp_path: Path) -> None:
    log, hidden, state = _hide_rotated_file_at_resume(tmp_path)
    clock = ManualClock()
    again = make(log, clock)
    again.restore(state)
    assert drain(again) == ["b1 new file"]
    # Restarted meanwhile: the checkpoint still says where that file's rest begins.
    state = again.checkpoint()
    again.close()
    again = make(log, clock)
    again.restore(state)
    assert drain(again) == []
    os.rename(hidden, tmp_path / "x.log.1")
    clock.advance(1.0)
    # Read whole, "a1 read" would count twice; from the checkpoint's offset, only the rest.
    assert drain(again) == ["a2 unread"]
    assert dict(again.health().errors) == {}


def test_a_file_resume_missed_for_good_is_reported_lost_once(tmp_path: Path) -> None:
    log, hidden, state = _hide_rotated_file_at_resume(tmp_path)
    clock = ManualClock()
    again = make(log, clock)
    again.restore(state)
    assert drain(again) == ["b1 new file"]
    assert dict(again.health().errors) == {}
    clock.advance(WAIT)
    drain(again)
    clock.advance(WAIT)
    drain(again)
    assert dict(again.health().errors) == {"resume_lost": 1}
    # Should it turn up after all, it still goes on from its offset, never whole.
    os.rename(hidden, tmp_path / "x.log.2")
    write(log, "b2\n")
    os.rename(log, tmp_path / "x.log.1")
    log.write_text("c1\n")
    clock.advance(1.0)
    assert sorted(drain(again)) == ["a2 unread", "b2", "c1"]
