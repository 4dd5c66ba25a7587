"""Decide what happened to a followed file between two looks (pure)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

#: How many leading bytes identify a file's content across renames and copies.
FINGERPRINT_BYTES = 1024

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


def classify(before: FileState, now: FileState | None, offset: int) -> Change:
    """What happened to the file we were reading at ``offset``.

    - ``gone``: the path no longer exists;
    - ``rotated``: the path now names another file (rename+create, delete+recreate);
    - ``replaced``: same identity but different leading bytes (inode reuse,
      or a rewrite in place): read the new content from the start;
    - ``truncated``: same file, now shorter than what we read (copytruncate);
    - ``grown`` / ``unchanged``.
    """
    if now is None:
        return "gone"
    if before.identity and now.identity and before.identity != now.identity:
        return "rotated"
    if now.size < offset:
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
