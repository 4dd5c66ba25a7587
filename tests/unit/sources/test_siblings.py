"""Listing rotated siblings while logrotate renames a chain of them.

One listing can miss a file: ``stat`` of a name finds the file that moved
into it, and the file that moved out lands under a name already stat-ed. The
torture test caught the follower taking such a miss for "gone", forgetting
that the file was done, and reading it again whole at the next look.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from acceptmon.sources.ssh.sftpfs import SFTPFS
from acceptmon.sources.tail import localfs, siblings
from acceptmon.sources.tail.fs import Stat
from acceptmon.sources.tail.localfs import LocalFS, to_stat
from acceptmon.sources.tail.siblings import DoneFiles, scan_siblings

FS = LocalFS()


def _files(tmp: Path, *names: str) -> Path:
    for name in names:
        (tmp / name).write_text(f"{name} " + "x" * 2000 + "\n")
    return tmp / "x.log"


def _renaming(tmp: Path, after_stat: str, moves: list[tuple[str, str]]) -> Any:
    """``os`` for the local filesystem: lists newest name first and, right after
    the first stat of ``after_stat``, performs logrotate's ``moves``."""
    done = False

    def listdir(path: str) -> list[str]:
        return sorted(os.listdir(path), reverse=True)

    def stat(path: str) -> os.stat_result:
        nonlocal done
        st = os.stat(path)
        if not done and os.path.basename(path) == after_stat:
            done = True
            for a, b in moves:
                os.rename(tmp / a, tmp / b)
        return st

    names = {k: getattr(os, k) for k in dir(os) if not k.startswith("__")}
    return SimpleNamespace(**{**names, "listdir": listdir, "stat": stat})


def test_a_done_file_missed_by_one_listing_is_not_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = _files(tmp_path, "x.log.1", "x.log.2")
    done = DoneFiles()
    done.register_existing(str(log), FS)
    monkeypatch.setattr(
        localfs, "os", _renaming(tmp_path, "x.log.2", [("x.log.2", "x.log.3"), ("x.log.1", "x.log.2")])
    )
    assert done.unseen(str(log), [], FS) == []
    monkeypatch.setattr(localfs, "os", os)
    assert done.unseen(str(log), [], FS) == [], "a file done before was taken for unread"


def test_the_listing_waits_for_two_that_agree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = _files(tmp_path, "x.log.1", "x.log.2")
    monkeypatch.setattr(
        localfs, "os", _renaming(tmp_path, "x.log.2", [("x.log.2", "x.log.3"), ("x.log.1", "x.log.2")])
    )
    found, settled = scan_siblings(FS, str(log))
    assert settled
    assert sorted(os.path.basename(p) for p, _ in found) == ["x.log.2", "x.log.3"]


def test_an_unsettled_listing_forgets_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = _files(tmp_path, "x.log.1", "x.log.2")
    done = DoneFiles()
    done.register_existing(str(log), FS)
    before = dict(done.entries)
    flip = iter(range(10**6))

    def restless(fs: LocalFS, real: str) -> list[tuple[str, Stat]]:
        name = "x.log.1" if next(flip) % 2 else "x.log.2"  # never the same twice in a row
        return [(str(tmp_path / name), to_stat(os.stat(tmp_path / name)))]

    monkeypatch.setattr(siblings, "_scan", restless)
    monkeypatch.setattr(FS, "scan_backoff_s", 0.0)
    assert scan_siblings(FS, str(log))[1] is False
    done.unseen(str(log), [], FS)
    assert done.entries == before


def test_a_scan_over_sftp_never_sleeps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Over SFTP the scan runs on the host's worker thread: an unsettled listing is looked
    at again at the next poll instead."""
    monkeypatch.setattr(time, "sleep", _no_sleep)
    calls = 0

    def restless(fs: object, real: str) -> list[tuple[str, Stat]]:
        nonlocal calls
        calls += 1
        return [(f"{real}.{calls}", Stat(1, 1, None))]

    monkeypatch.setattr(siblings, "_scan", restless)
    assert scan_siblings(SFTPFS(cast(Any, None)), str(tmp_path / "x.log"))[1] is False
    assert calls == siblings.QUICK_SCAN_TRIES


def _no_sleep(_s: float) -> None:
    raise AssertionError("the sibling scan slept")
