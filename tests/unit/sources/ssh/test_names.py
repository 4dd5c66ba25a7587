"""Rotated-sibling ordering (the one age rule, tail/siblings.py) and glob filtering for remote logs."""

from __future__ import annotations

from acceptmon.sources.rotation import is_rotated_name
from acceptmon.sources.ssh.names import glob_matches
from acceptmon.sources.tail.fs import DirEntry
from acceptmon.sources.tail.siblings import age_key


def siblings_oldest_first(base: str, entries: list[DirEntry]) -> list[DirEntry]:
    found = [e for e in entries if is_rotated_name(base, e.name)]
    return sorted(found, key=lambda e: age_key(base, e.name, e.mtime_ns))


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
