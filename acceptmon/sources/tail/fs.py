"""The little a follower needs of a filesystem, and the one typed file identity.

Following a path across rotation needs only: stat a path, list a directory,
open a file and read it at an offset through a handle that stays bound to the
file it opened if its name changes (true of local files and of a POSIX
sftp-server). What differs is identity: locally a file is its ``DevInode``
(``localfs``); SFTP has no inode, so a file is known by the ``HeadHash`` of its
first bytes (``ssh/sftpfs``). How far an unchanged stat can be trusted differs
too (``mtime_resolution_ns``: SFTP's mtimes are whole seconds). Tests use an
in-memory one with either semantics.
Both render to the strings checkpoints and ``Position.identity`` have always
carried (``dev:ino``, ``sftp:<16 hex>``), so old checkpoints stay readable.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

_HEX = frozenset("0123456789abcdef")


@dataclass(frozen=True, slots=True)
class DevInode:
    """A local file: survives renames, not copies."""

    dev: int
    ino: int

    def __str__(self) -> str:
        return f"{self.dev}:{self.ino}"


@dataclass(frozen=True, slots=True)
class HeadHash:
    """A file where the transport has no inode: the fingerprint of its first bytes at first sight."""

    digest: str

    @classmethod
    def of(cls, fingerprint: str) -> HeadHash:
        """The identity of a file whose head hashes to ``fingerprint`` (16 hex digits kept)."""
        return cls(fingerprint[:16])

    def __str__(self) -> str:
        return f"sftp:{self.digest}"


FileId = DevInode | HeadHash


def parse_file_id(text: str) -> FileId | None:
    """The identity ``str()`` wrote, or None if ``text`` is not one."""
    if text.startswith("sftp:"):
        digest = text[5:]
        return HeadHash(digest) if digest and set(digest) <= _HEX else None
    dev, sep, ino = text.partition(":")
    if sep and dev.isdigit() and ino.isdigit():
        return DevInode(int(dev), int(ino))
    return None


@dataclass(frozen=True, slots=True)
class Stat:
    """One look at a path: what tells a grown file from an untouched one.

    ``identity`` is the ``DevInode`` where the filesystem has inodes, else None.
    """

    size: int
    mtime_ns: int
    identity: DevInode | None = None
    regular: bool = True


@dataclass(frozen=True, slots=True)
class DirEntry:
    """A regular file in a listing, with what one stat of it said."""

    name: str
    size: int
    mtime_ns: int
    identity: DevInode | None = None


class Handle(Protocol):
    """An open file: its size and bytes are the file's, whatever its name is now."""

    def size(self) -> int: ...

    def stat(self) -> Stat:
        """The open file's size, mtime and (where there are inodes) identity."""
        ...

    def read_at(self, offset: int, n: int) -> bytes:
        """Up to ``n`` bytes from ``offset`` (fewer at end of file)."""
        ...

    def identity(self) -> FileId | None:
        """``DevInode`` locally; without inodes the ``HeadHash`` of its head now (None if empty)."""
        ...

    def close(self) -> None: ...


class FileSystem(Protocol):
    """Raises ``FileNotFoundError``/``PermissionError`` as ``os`` does; anything else is the transport's."""

    @property
    def mtime_resolution_ns(self) -> int:
        """How coarse its mtimes are: a file rewritten within this long of a look can stat the same,
        so an unchanged stat proves nothing until a look this much later (1 locally, 1 s over SFTP)."""
        ...

    @property
    def scan_backoff_s(self) -> float:
        """How long a sibling scan may wait between two listings that disagree (logrotate
        mid-chain), growing per try: a little locally, where it runs on the consumer's
        thread; 0 over SFTP, where it runs on the host's worker thread and never sleeps."""
        ...

    def stat(self, path: str) -> Stat: ...

    def listdir(self, path: str, want: Callable[[str], bool] | None = None) -> list[DirEntry]:
        """The regular files in directory ``path`` whose names ``want`` accepts (all if None).

        Only those are looked at: a log directory may hold thousands of other files.
        """
        ...

    def open(self, path: str) -> Handle: ...

    def realpath(self, path: str) -> str:
        """``path`` with symbolic links resolved (as it is where there are none)."""
        ...
