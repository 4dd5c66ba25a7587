"""Rotated siblings of a remote log in age order, and glob matching (pure).

Rotated siblings are where a followed file's unread tail goes on rotation
(``app.log.1``, ``app.log-20250601``). The naming rules are the local
source's (``rotation.is_rotated_name``); what SFTP adds is ordering by age
with only whole-second mtimes, so ``.N`` suffixes break ties. A glob must not
pick up these siblings as logs of their own, or their lines would be read twice.
"""

from __future__ import annotations

import fnmatch

from acceptmon.sources.rotation import is_compressed, is_rotated_name, rotation_base
from acceptmon.sources.tail.fs import DirEntry


def _age_key(base: str, entry: DirEntry) -> tuple[int, int, str]:
    """Older first: by mtime, then ``.N`` descending (higher N is older), then name.

    A long all-digit suffix is a date or epoch stamp (``-20250601``), which
    sorts by name like any other date format.
    """
    suffix = entry.name[len(base) + 1 :]
    number = int(suffix) if suffix.isdigit() and len(suffix) <= 4 else 0
    return (entry.mtime_ns, -number, entry.name)


def siblings_oldest_first(base: str, entries: list[DirEntry]) -> list[DirEntry]:
    """The rotated, uncompressed siblings of ``base`` among ``entries``, oldest first."""
    found = [e for e in entries if e.name != base and is_rotated_name(base, e.name)]
    return sorted(found, key=lambda e: _age_key(base, e))


def glob_matches(pattern: str, names: list[str]) -> list[str]:
    """Names matching a file-name glob, minus compressed files and rotated siblings of other matches."""
    hits = sorted(n for n in names if fnmatch.fnmatchcase(n, pattern) and not is_compressed(n))
    present = set(hits)
    return [n for n in hits if rotation_base(n, present) is None]
