"""Where a log's content went: its rotated siblings, by identity or fingerprint.

Used when the file we were reading is no longer at its path with the same
content — rotated, or copytruncated (the copy has a new inode but the same
leading bytes) — and to find whole files rotated through the path while we
were not looking (agent down, or several rotations between two polls).
"""

from __future__ import annotations

import posixpath
import time
from collections.abc import Iterable
from typing import Any

from acceptmon.sources.rotation import FINGERPRINT_BYTES, fingerprint, is_rotated_name
from acceptmon.sources.tail.fs import FileSystem, Handle, HeadHash, Stat
from acceptmon.sources.tail.stream import (
    FileStream,
    Known,
    file_id_of,
    identity_of,
    known_prefix,
    prefix_fingerprint,
)

#: Listings a scan takes at most to find two that agree; from the third on it waits
#: ``FileSystem.scan_backoff_s`` per try, where that is not 0. Unsettled, the follower
#: looks again at its next poll.
SCAN_TRIES = 12
#: Without waiting, fewer tries: immediate listings agree, or logrotate is mid-chain.
QUICK_SCAN_TRIES = 4


def age_key(base: str, name: str, mtime_ns: int) -> tuple[int, int, str]:
    """The one order of a log's rotated siblings, older first: by mtime, then ``.N``
    descending (higher N is older: SFTP's whole-second mtimes tie), then name.

    A long all-digit suffix is a date or epoch stamp (``-20250601``), which
    sorts by name like any other date format.
    """
    suffix = name[len(base) + 1 :]
    number = int(suffix) if suffix.isdigit() and len(suffix) <= 4 else 0
    return (mtime_ns, -number, name)


def rotated_siblings(fs: FileSystem, real: str) -> list[tuple[str, Stat]]:
    """Regular, uncompressed files next to ``real`` named like its rotations, oldest first."""
    return scan_siblings(fs, real)[0]


def scan_siblings(fs: FileSystem, real: str) -> tuple[list[tuple[str, Stat]], bool]:
    """The rotated siblings, and whether two listings in a row agreed on them.

    logrotate renames a whole chain of files while we list and stat them, so one
    listing can miss a file (stat of ``.5`` found ``.4``'s file; ``.6`` was
    stat-ed before ``.5``'s file reached it). A missed file looks gone, and its
    "done" mark went with it: the next look read it again whole. So list until
    two listings agree (locally backing off a little, as before the SSH source
    shared this scan); a caller that would forget files unless they are listed
    acts only on a settled listing, and looks again at its next poll.
    """
    found = _scan(fs, real)
    backoff = fs.scan_backoff_s
    for attempt in range(1, SCAN_TRIES if backoff else QUICK_SCAN_TRIES):
        if attempt >= 3 and backoff:
            time.sleep(backoff * (attempt - 2))
        again = _scan(fs, real)
        if _same(again, found):
            return again, True
        found = again
    return found, False


def _scan(fs: FileSystem, real: str) -> list[tuple[str, Stat]]:
    directory, base = posixpath.split(real)
    try:
        entries = fs.listdir(directory or ".", lambda name: is_rotated_name(base, name))
    except OSError:
        return []
    found = [(e.name, Stat(e.size, e.mtime_ns, e.identity)) for e in entries]
    found.sort(key=lambda f: age_key(base, f[0], f[1].mtime_ns))
    return [(posixpath.join(directory, name), st) for name, st in found]


def _same(a: list[tuple[str, Stat]], b: list[tuple[str, Stat]]) -> bool:
    """Same names for the same files (without inodes: the same sizes and mtimes)."""

    def key(found: list[tuple[str, Stat]]) -> list[tuple[str, str, int, int]]:
        return sorted(
            (p, identity_of(st), *((0, 0) if st.identity else (st.size, st.mtime_ns))) for p, st in found
        )

    return key(a) == key(b)


def find_content(
    real: str,
    identity: str,
    fp: str,
    fp_len: int,
    *,
    min_size: int,
    fs: FileSystem,
    exclude: frozenset[str] = frozenset(),
    known: Known = (),
) -> tuple[Handle, str] | None:
    """Open the sibling holding this content: same identity first, then same fingerprint.

    A candidate must be at least ``min_size`` long and start with the bytes
    hashed in ``fp`` (or, if shorter than them, be one of the whole-line
    prefixes ``known`` tells); with no fingerprint only the identity can match.
    Returns (handle, path) or None.
    """
    candidates = [
        (path, st)
        for path, st in rotated_siblings(fs, real)
        if st.size >= min_size and identity_of(st) not in exclude
    ]
    candidates.sort(key=lambda c: identity_of(c[1]) != identity)
    for path, st in candidates:
        if not fp_len and identity_of(st) != identity:
            continue
        h = _open(fs, path)
        if h is None:
            continue
        if not fp_len or _starts_with(h, fp, fp_len) or _is_known(h, st.size, known):
            return h, path
        h.close()
    return None


def copy_identity(
    real: str, identity: str, fp: str, fp_len: int, *, fs: FileSystem, known: Known = ()
) -> tuple[str, str, int] | None:
    """Another sibling that starts with the bytes hashed in ``fp``, however long it is:
    its identity and what ``DoneFiles`` knows it by (without inodes: its own head, which
    may be shorter than ``fp``'s; with them, ``fp``)."""
    found = find_content(
        real, identity, fp, fp_len, min_size=0, fs=fs, exclude=frozenset([identity]), known=known
    )
    if found is None:
        return None
    h = found[0]
    try:
        st = h.stat()
        if st.identity is not None:
            return str(st.identity), fp, fp_len
        head = h.read_at(0, FINGERPRINT_BYTES)
        return str(file_id_of(h, st)), fingerprint(head), len(head)
    finally:
        h.close()


class DoneFiles:
    """Rotated siblings we need not read: finished by us, or there before we started.

    Keyed by identity, with the fingerprint of the first bytes so that a new
    file that reuses a done file's inode is still read. Without inodes the key
    is the ``HeadHash`` of those bytes, and a file is done if it starts with them.
    """

    def __init__(self, entries: dict[str, tuple[str, int]] | None = None) -> None:
        self.entries = dict(entries or {})
        #: Whether the last ``unseen`` listed the directory twice alike.
        self.settled = True

    def add(self, identity: str, fp: str, fp_len: int) -> None:
        self.entries[identity] = (fp, fp_len)

    def register_existing(self, real: str, fs: FileSystem) -> None:
        """Everything already rotated when we start following a path is not ours to read."""
        for path, st in rotated_siblings(fs, real):
            h = _open(fs, path)
            if h is not None:
                try:
                    data = h.read_at(0, FINGERPRINT_BYTES)
                finally:
                    h.close()
                fp = _fp(data)
                key = identity_of(st) or (str(HeadHash.of(fp[0])) if data else "")
                if key:
                    self.add(key, *fp)

    def unseen(
        self, real: str, streams: Iterable[FileStream], fs: FileSystem
    ) -> list[tuple[Handle, str, int]]:
        """Open the siblings nobody has read: not followed, not done, not a copy of followed content.

        Returns (handle, path, mtime_ns), oldest first.
        """
        followed = list(streams)
        known = {s.identity for s in followed}
        present: set[str] = set()
        out = []
        siblings, settled = scan_siblings(fs, real)
        for path, st in siblings:
            identity = identity_of(st)
            present.add(identity)
            h = None if identity in known else _open(fs, path)
            if h is None:
                continue
            done = self.entries.get(identity) if identity else self._done_by_content(h, present)
            if (
                (done and _starts_with(h, *done))
                or any(_starts_with(h, s.fp, s.fp_len) or _is_known(h, st.size, s.head) for s in followed)
                or _copy_under_way(h, st.size, followed)
            ):
                h.close()
                continue
            out.append((h, path, st.mtime_ns))
        self.settled = settled
        if settled:  # forget only what a settled listing shows gone
            self.entries = {k: v for k, v in self.entries.items() if k in present or k in known}
        return out

    def _done_by_content(self, h: Handle, present: set[str]) -> tuple[str, int] | None:
        """Without inodes: the done entry this file starts like (then still present), if any."""
        try:
            head = h.read_at(0, FINGERPRINT_BYTES)
        except OSError:
            return None
        for key, (fp, n) in self.entries.items():
            if n and len(head) >= n and fingerprint(head[:n]) == fp:
                present.add(key)
                return fp, n
        return None

    def to_json(self) -> dict[str, Any]:
        return {k: list(v) for k, v in self.entries.items()}

    @classmethod
    def from_json(cls, raw: Any) -> DoneFiles:
        done = cls()
        if isinstance(raw, dict):
            for k, v in raw.items():
                if isinstance(v, list) and len(v) == 2 and isinstance(v[0], str) and isinstance(v[1], int):
                    done.add(str(k), v[0], v[1])
        return done


def _fp(data: bytes) -> tuple[str, int]:
    return (fingerprint(data), len(data)) if data else ("", 0)


def _copy_under_way(h: Handle, size: int, followed: list[FileStream]) -> bool:
    """Whether this sibling may be a copy still being written: empty, or a prefix of followed content.

    copytruncate creates its copy empty and then fills it; taken for unread
    content at that moment, it would be read whole and again by the stream
    that moves to it after the truncate.
    """
    if size == 0:
        return True
    try:
        head = h.read_at(0, min(size, FINGERPRINT_BYTES))
    except OSError:
        return False
    for s in followed:
        if s.handle is None:
            continue
        try:
            if s.handle.read_at(0, len(head)) == head:
                return True
        except OSError:
            continue
    return False


def holds(h: Handle, identity: str, fp: str, fp_len: int, min_size: int, known: Known = ()) -> bool:
    """Whether the open file holds this content, by ``find_content``'s rule."""
    st = h.stat()
    if st.size < min_size:
        return False
    if not fp_len:
        return identity_of(st) == identity
    return _starts_with(h, fp, fp_len) or _is_known(h, st.size, known)


def _starts_with(h: Handle, fp: str, fp_len: int) -> bool:
    if not fp_len:
        return False
    try:
        return prefix_fingerprint(h, fp_len) == fp
    except OSError:
        return False


def _is_known(h: Handle, size: int, known: Known) -> bool:
    """Whether the whole file is a prefix of the content ``known`` describes."""
    fp = known_prefix(known, size)
    if fp is None:
        return False
    try:
        return prefix_fingerprint(h, size) == fp
    except OSError:
        return False


def _open(fs: FileSystem, path: str) -> Handle | None:
    try:
        return fs.open(path)
    except OSError:
        return None
