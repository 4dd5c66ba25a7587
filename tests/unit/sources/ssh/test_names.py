"""Rotated-sibling ordering and glob filtering for remote logs."""

from __future__ import annotations

from acceptmon.sources.ssh.names import glob_matches, siblings_oldest_first
from acceptmon.sources.tail.fs import DirEntry


def test_siblings_oldest_first_with_same_second_mtimes() -> None:
    entries = [
        DirEntry("app.log", 10, 200),
        DirEntry("app.log.1", 10, 150),
        DirEntry("app.log.2", 10, 150),
        DirEntry("app.log.10", 10, 150),
        DirEntry("app.log.3.gz", 10, 100),
        DirEntry("other.log.1", 10, 100),
    ]
    names = [e.name for e in siblings_oldest_first("app.log", entries)]
    assert names == ["app.log.10", "app.log.2", "app.log.1"]


def test_date_suffixes_sort_by_mtime_then_name() -> None:
    entries = [
        DirEntry("app.log-20250602", 1, 50),
        DirEntry("app.log-20250601", 1, 50),
        DirEntry("app.log-20250530", 1, 10),
    ]
    names = [e.name for e in siblings_oldest_first("app.log", entries)]
    assert names == ["app.log-20250530", "app.log-20250601", "app.log-20250602"]


def test_glob_skips_compressed_and_rotated_siblings_of_matches() -> None:
    names = ["a.log", "a.log.1", "a.log-20250601", "b.log.2.gz", "c.log", "notes.txt"]
    assert glob_matches("*.log*", names) == ["a.log", "c.log"]
    assert glob_matches("*.txt", names) == ["notes.txt"]
