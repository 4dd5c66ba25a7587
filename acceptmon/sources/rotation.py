"""Rotated and compressed file names, and what happened to a followed file between two looks (pure).

The one rule for "is this a rotation of another file" (``rotation_base``) and the
one table of the compressed endings acceptmon can read (``decompressed``): the
followers, the agent's globs and the SOURCE grammar all use these.
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import heapq
import lzma
import re
import zlib
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, Literal, Protocol

from acceptmon.sources.lines import Readable

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

    Both are file names, or paths in one directory.
    """
    if not name.startswith(base) or is_compressed(name):
        return False
    return _ROTATED_SUFFIX.fullmatch(name, len(base)) is not None


def plain_name(name: str) -> str:
    """The name without a compression suffix."""
    lower = name.lower()
    for suffix in COMPRESSED_SUFFIXES:
        if lower.endswith(suffix):
            return name[: -len(suffix)]
    return name


def rotation_base(name: str, names: Collection[str]) -> str | None:
    """The uncompressed name among ``names`` that ``name`` (compressed or not) is a rotation of, or None.

    Prefix lookups, not a scan of every other name: a glob over 2,000 files
    costs 2,000 checks, not four million. The shortest such prefix is the log
    itself (a rotation of a rotation is a rotation of the log), never a rotation.
    """
    plain = plain_name(name)
    for k in range(1, len(plain)):
        base = plain[:k]
        if base in names and not is_compressed(base) and is_rotated_name(base, plain):
            return base
    return None


def group_rotations(paths: list[str], age: Callable[[str], float]) -> list[tuple[str, tuple[str, ...]]]:
    """Each log among ``paths`` with its files: (log, its rotations oldest first, the log last).

    A rotation (``x.log.1``, ``x.log.2.gz``) joins the log it was rotated from
    when that is among ``paths``; any other path is a log of its own.
    """
    present = set(paths)
    members: dict[str, list[str]] = {}
    rotated: list[tuple[str, str]] = []
    for p in paths:
        base = rotation_base(p, present)
        if base is None:
            members.setdefault(p, [])
        else:
            rotated.append((base, p))
    for base, p in rotated:
        members.setdefault(base, []).append(p)
    return [(base, (*oldest_first(base, older, age), base)) for base, older in sorted(members.items())]


#: A rotation counter (``x.log.3``), as logrotate and Python's RotatingFileHandler number them;
#: longer runs of digits are dates or epoch times (``x.log-20261201``).
_COUNTER = re.compile(r"[._-](\d{1,4})")


def oldest_first(base: str, rotations: list[str], age: Callable[[str], float]) -> list[str]:
    """The rotations of ``base``, oldest first: by their names, ``age`` only between schemes.

    Copies made in one second (a restore, ``cp -p``, a tarball unpacked) share a modification
    time, so names decide: ``x.log.2`` is older than ``x.log.1``, ``x.log-20261130`` than
    ``x.log-20261201``. Only between two schemes (a counter and a date) does ``age`` order.
    """
    counted: list[tuple[int, str]] = []
    dated: list[tuple[list[int], str]] = []
    for path in rotations:
        suffix = plain_name(path)[len(base) :]
        counter = _COUNTER.fullmatch(suffix)
        if counter:
            counted.append((-int(counter.group(1)), path))
        else:
            dated.append(([int(d) for d in re.findall(r"\d+", suffix)], path))
    schemes = [[p for _, p in sorted(counted)], [p for _, p in sorted(dated)]]
    return list(heapq.merge(*schemes, key=lambda p: (age(p), p)))


class _Stream(Readable, Protocol):
    def close(self) -> None: ...


def _gzip(raw: IO[bytes]) -> _Stream:
    return gzip.GzipFile(fileobj=raw, mode="rb")


def _bz2(raw: IO[bytes]) -> _Stream:
    return bz2.BZ2File(raw, "rb")


def _xz(raw: IO[bytes]) -> _Stream:
    return lzma.LZMAFile(raw, "rb")


#: The compressed endings acceptmon reads (stdlib codecs), each over the raw bytes of
#: its file; the other ``COMPRESSED_SUFFIXES`` cannot be read and are skipped.
_DECOMPRESS: dict[str, Callable[[IO[bytes]], _Stream]] = {
    ".gz": _gzip,
    ".bz2": _bz2,
    ".xz": _xz,
    ".lzma": _xz,
}

#: What reading a file (a damaged compressed one included) may raise: a problem with that file.
READ_ERRORS: tuple[type[Exception], ...] = (OSError, EOFError, lzma.LZMAError, zlib.error)


def _suffix(name: str) -> str:
    dot = name.rfind(".")
    return name[dot:].lower() if dot > name.rfind("/") else ""


def readable(name: str) -> bool:
    """Whether acceptmon can read the file: uncompressed, or compressed in a format of the table."""
    return not is_compressed(name) or _suffix(name) in _DECOMPRESS


@contextmanager
def decompressed(raw: IO[bytes], name: str) -> Iterator[Readable]:
    """The bytes of file ``name`` read from ``raw``, decompressed when its ending says so."""
    make = _DECOMPRESS.get(_suffix(name))
    if make is None:
        yield raw
        return
    stream = make(raw)
    try:
        yield stream
    finally:
        stream.close()


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


@contextmanager
def open_local(path: str) -> Iterator[Readable]:
    """A local file's bytes, decompressed when its name ends in a compressed suffix."""
    with open(path, "rb") as raw, decompressed(raw, path) as stream:
        yield stream
