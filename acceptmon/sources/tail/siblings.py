"""Where a log's content went: its rotated siblings, by identity or fingerprint.

Used when the file we were reading is no longer at its path with the same
content — rotated, or copytruncated (the copy has a new inode but the same
leading bytes) — and to find whole files rotated through the path while we
were not looking (agent down, or several rotations between two polls).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from typing import Any

from acceptmon.sources.rotation import FINGERPRINT_BYTES, fingerprint, is_rotated_name
from acceptmon.sources.tail.fs import DevInode, FileSystem, Handle, Stat, parse_file_id
from acceptmon.sources.tail.stream import FileStream, identity_of, prefix_fingerprint


def rotated_siblings(fs: FileSystem, real: str) -> list[tuple[str, Stat]]:
    """Regular, uncompressed files next to ``real`` named like its rotations, oldest first."""
    directory, base = posixpath.split(real)
    try:
        entries = fs.listdir(directory or ".")
    except OSError:
        return []
    found = [
        (posixpath.join(directory, e.name), e.stat)
        for e in entries
        if e.stat.identity is not None and is_rotated_name(base, e.name)
    ]
    return sorted(found, key=lambda f: (f[1].mtime_ns, f[0]))


def find_content(
    real: str,
    identity: DevInode,
    fp: str,
    fp_len: int,
    *,
    min_size: int,
    fs: FileSystem,
    exclude: frozenset[DevInode] = frozenset(),
    head: bytes = b"",
) -> tuple[Handle, str] | None:
    """Open the sibling holding this content: same identity first, then same fingerprint.

    A candidate must be at least ``min_size`` long and start with the bytes
    hashed in ``fp`` (or, shorter than them, be the start of ``head``, the
    bytes hashed, where known); with no fingerprint only the identity can
    match. Returns (handle, path) or None.
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
        if not fp_len or _starts_with(h, fp, fp_len) or _is_short_copy(h, st.size, head):
            return h, path
        h.close()
    return None


def copy_identity(
    real: str, identity: DevInode, fp: str, fp_len: int, *, fs: FileSystem, head: bytes = b""
) -> tuple[DevInode, str, int] | None:
    """Another sibling that starts with this content, however long it is: its
    identity and the fingerprint (and its length) that will know it as done."""
    found = find_content(
        real, identity, fp, fp_len, min_size=0, fs=fs, exclude=frozenset([identity]), head=head
    )
    if found is None:
        return None
    h = found[0]
    try:
        st = h.stat()
        short = st.size < fp_len
        return identity_of(st), fingerprint(head[: st.size]) if short else fp, st.size if short else fp_len
    finally:
        h.close()


def _is_short_copy(h: Handle, size: int, head: bytes) -> bool:
    """Whether this file, shorter than ``head``, is its start: a copy that ended early
    (copytruncate copied only part of what the writer had written by the truncate)."""
    if not 0 < size < len(head):
        return False
    try:
        return h.read_at(0, size) == head[:size]
    except OSError:
        return False


class DoneFiles:
    """Rotated siblings we need not read: finished by us, or there before we started.

    Keyed by identity, with the fingerprint of the first bytes so that a new
    file that reuses a done file's inode is still read.
    """

    def __init__(self, entries: dict[DevInode, tuple[str, int]] | None = None) -> None:
        self.entries = dict(entries or {})

    def add(self, identity: DevInode, fp: str, fp_len: int) -> None:
        self.entries[identity] = (fp, fp_len)

    def register_existing(self, real: str, fs: FileSystem) -> None:
        """Everything already rotated when we start following a path is not ours to read."""
        for path, st in rotated_siblings(fs, real):
            h = _open(fs, path)
            if h is not None:
                try:
                    data = h.read_at(0, FINGERPRINT_BYTES)
                except OSError:
                    continue
                finally:
                    h.close()
                self.add(identity_of(st), *_fp(data))

    def unseen(
        self, real: str, streams: Iterable[FileStream], fs: FileSystem
    ) -> list[tuple[Handle, str, int]]:
        """Open the siblings nobody has read: not followed, not done, not a copy of followed content.

        Returns (handle, path, mtime_ns), oldest first.
        """
        followed = list(streams)
        known = {s.identity for s in followed}
        present: set[DevInode] = set()
        out = []
        for path, st in rotated_siblings(fs, real):
            identity = identity_of(st)
            present.add(identity)
            h = None if identity in known else _open(fs, path)
            if h is None:
                continue
            done = self.entries.get(identity)
            if (
                (done and _starts_with(h, *done))
                or any(_starts_with(h, s.fp, s.fp_len) for s in followed)
                or _copy_under_way(h, st.size, followed)
            ):
                h.close()
                continue
            out.append((h, path, st.mtime_ns))
        self.entries = {k: v for k, v in self.entries.items() if k in present or k in known}
        return out

    def to_json(self) -> dict[str, Any]:
        return {str(k): list(v) for k, v in self.entries.items()}

    @classmethod
    def from_json(cls, raw: Any) -> DoneFiles:
        done = cls()
        if isinstance(raw, dict):
            for k, v in raw.items():
                identity = parse_file_id(str(k))
                ok = isinstance(v, list) and len(v) == 2 and isinstance(v[0], str) and isinstance(v[1], int)
                if ok and isinstance(identity, DevInode):
                    done.add(identity, v[0], v[1])
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


def _starts_with(h: Handle, fp: str, fp_len: int) -> bool:
    if not fp_len:
        return False
    try:
        return prefix_fingerprint(h, fp_len) == fp
    except OSError:
        return False


def _open(fs: FileSystem, path: str) -> Handle | None:
    try:
        return fs.open(path)
    except OSError:
        return None
