"""``FileSystem`` (``tail.fs``) over ``os``: descriptors, ``fstat`` and ``pread``; identity is dev+inode.

A descriptor keeps reading the file it opened after a rename or delete, which
is what lets the follower finish a rotated file. The opener is injectable so
tests can refuse or count opens.
"""

from __future__ import annotations

import os
import stat as statmod
from collections.abc import Callable

from acceptmon.sources.tail.fs import DevInode, DirEntry, Stat

#: Opens a path read-only and returns a file descriptor.
Opener = Callable[[str], int]


def default_opener(path: str) -> int:
    return os.open(path, os.O_RDONLY | os.O_CLOEXEC)


def to_stat(st: os.stat_result) -> Stat:
    return Stat(st.st_size, st.st_mtime_ns, DevInode(st.st_dev, st.st_ino), statmod.S_ISREG(st.st_mode))


class LocalHandle:
    """An open descriptor."""

    __slots__ = ("fd",)

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def size(self) -> int:
        return os.fstat(self.fd).st_size

    def stat(self) -> Stat:
        return to_stat(os.fstat(self.fd))

    def read_at(self, offset: int, n: int) -> bytes:
        return os.pread(self.fd, n, offset) if n > 0 else b""

    def identity(self) -> DevInode:
        st = os.fstat(self.fd)
        return DevInode(st.st_dev, st.st_ino)

    def close(self) -> None:
        os.close(self.fd)


class LocalFS:
    #: Nanosecond mtimes: an unchanged stat is trusted at once.
    mtime_resolution_ns = 1
    #: A sibling scan may back off a little on the consumer's thread.
    scan_backoff_s = 0.002

    def __init__(self, opener: Opener = default_opener) -> None:
        self._opener = opener

    def stat(self, path: str) -> Stat:
        return to_stat(os.stat(path))

    def listdir(self, path: str, want: Callable[[str], bool] | None = None) -> list[DirEntry]:
        directory = path or "."
        out = []
        for name in os.listdir(directory):
            if want is not None and not want(name):
                continue
            try:
                st = os.stat(os.path.join(directory, name))
            except OSError:
                continue  # gone (or unreadable) since the listing
            if statmod.S_ISREG(st.st_mode):
                out.append(DirEntry(name, st.st_size, st.st_mtime_ns, DevInode(st.st_dev, st.st_ino)))
        return out

    def open(self, path: str) -> LocalHandle:
        return LocalHandle(self._opener(path))

    def realpath(self, path: str) -> str:
        return os.path.realpath(path)
