"""Decide what happened to a followed file between two looks (pure)."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Literal

#: How many leading bytes identify a file's content across renames and copies.
FINGERPRINT_BYTES = 1024

#: Rotated files with these endings are compressed copies: never read them.
COMPRESSED_SUFFIXES = (".gz", ".xz", ".bz2", ".zst", ".lz4", ".lzma", ".z", ".zip")

# ``x.log.1``, ``x.log-20261201``, ``x.log.2026-12-01``, ``x.log_3``: the base
# name, a separator, then something starting with a digit.
_ROTATED_SUFFIX = re.compile(r"[._-]\d[\w.:-]*")

Change = Literal["unchanged", "grown", "truncated", "rotated", "replaced", "gone"]


@dataclass(frozen=True, slots=True)
class FileState:
    """What one look at a file tells.

    ``identity`` is ``dev:ino`` locally and empty where the transport has no
    inode (SFTP). ``fingerprint`` is a hash of the first ``fp_len`` bytes
    (at most ``FINGERPRINT_BYTES``) and survives rename and copytruncate.
    """

    identity: str
    size: int
    fingerprint: str = ""
    fp_len: int = 0


def fingerprint(data: bytes) -> str:
    """Hash of a file's leading bytes; equal hashes over equal lengths mean the same content."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def is_compressed(name: str) -> bool:
    return name.lower().endswith(COMPRESSED_SUFFIXES)


def is_rotated_name(base: str, name: str) -> bool:
    """Whether ``name`` looks like a rotated, uncompressed copy of the log ``base``.

    Both are plain file names (no directory).
    """
    if not name.startswith(base) or is_compressed(name):
        return False
    return _ROTATED_SUFFIX.fullmatch(name, len(base)) is not None


def classify(before: FileState, now: FileState | None, offset: int) -> Change:
    """What happened to the file we were reading at ``offset``.

    - ``gone``: the path no longer exists;
    - ``rotated``: the path now names another file (rename+create, delete+recreate);
    - ``replaced``: same identity but different leading bytes (inode reuse,
      or a rewrite in place): read the new content from the start;
    - ``truncated``: same file, now shorter than what we read or saw before
      (copytruncate): logs only grow, so any shrink is a truncation;
    - ``grown`` / ``unchanged``.
    """
    if now is None:
        return "gone"
    if before.identity and now.identity and before.identity != now.identity:
        return "rotated"
    if now.size < max(offset, before.size):
        return "truncated"
    if _content_differs(before, now):
        return "rotated" if not before.identity else "replaced"
    if now.size > offset:
        return "grown"
    return "unchanged"


def _content_differs(before: FileState, now: FileState) -> bool:
    """Compare fingerprints over the prefix both looks covered."""
    if not before.fingerprint or not now.fingerprint:
        return False
    if before.fp_len == now.fp_len:
        return before.fingerprint != now.fingerprint
    return False
