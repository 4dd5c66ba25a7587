"""The little a follower needs of a filesystem, and the one typed file identity.

Following a path across rotation needs only: stat a path, list a directory,
open a file and read it at an offset through a handle that stays bound to
that file if its name changes. Local files and SFTP both give that; what
differs is identity. Locally a file is its ``DevInode``; SFTP has no inode,
so a file is known by a ``HeadHash`` of its first bytes. Both render to the
strings checkpoints and ``Position.identity`` carry (``dev:ino``, ``sftp:…``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


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
        """The identity for a file whose first bytes hash to ``fingerprint`` (16 hex digits kept)."""
        return cls(fingerprint[:16])

    def __str__(self) -> str:
        return f"sftp:{self.digest}"


FileId = DevInode | HeadHash


def parse_file_id(text: str) -> FileId | None:
    """The identity a checkpoint wrote with ``str()``, or None if it is not one."""
    if text.startswith("sftp:"):
        digest = text[5:]
        return HeadHash(digest) if digest and all(c in "0123456789abcdef" for c in digest) else None
    dev, sep, ino = text.partition(":")
    if sep and dev.isdigit() and ino.isdigit():
        return DevInode(int(dev), int(ino))
    return None


@dataclass(frozen=True, slots=True)
class Stat:
    """One look at a path. ``identity`` is None where the transport has no inode."""

    size: int
    mtime_ns: int
    identity: DevInode | None = None
    regular: bool = True


@dataclass(frozen=True, slots=True)
class DirEntry:
    """A regular file in a listing, with what one stat of it said."""

    name: str
    stat: Stat

    @property
    def size(self) -> int:
        return self.stat.size

    @property
    def mtime_ns(self) -> int:
        return self.stat.mtime_ns


class Handle(Protocol):
    """An open file: reads and size come from the file, whatever its name is now."""

    def size(self) -> int: ...

    def read_at(self, offset: int, n: int) -> bytes: ...

    def stat(self) -> Stat:
        """The open file's size, mtime and (where there are inodes) identity."""
        ...

    def identity(self) -> FileId | None:
        """``DevInode`` locally; over SFTP the ``HeadHash`` of what the file starts with now."""
        ...

    def close(self) -> None: ...


class FileSystem(Protocol):
    """Raises ``FileNotFoundError``/``PermissionError``/``OSError`` like ``os`` does."""

    def stat(self, path: str) -> Stat: ...

    def listdir(self, path: str) -> list[DirEntry]:
        """The regular files in ``path`` (unreadable entries left out)."""
        ...

    def open(self, path: str) -> Handle: ...

    def realpath(self, path: str) -> str:
        """``path`` with symbolic links resolved (as is where there are none)."""
        ...
