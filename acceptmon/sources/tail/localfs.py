"""``FileSystem`` over ``os``: descriptors, ``fstat`` and ``pread``; identity is dev+inode."""

from __future__ import annotations

import os
import stat as statmod
from collections.abc import Callable

from acceptmon.sources.tail.fs import DevInode, DirEntry, Stat

#: Opens a path read-only and returns a file descriptor (injectable for tests).
Opener = Callable[[str], int]


def default_opener(path: str) -> int:
    return os.open(path, os.O_RDONLY | os.O_CLOEXEC)


def dev_inode(st: os.stat_result) -> DevInode:
    return DevInode(st.st_dev, st.st_ino)


def to_stat(st: os.stat_result) -> Stat:
    return Stat(st.st_size, st.st_mtime_ns, dev_inode(st), statmod.S_ISREG(st.st_mode))


class LocalHandle:
    """An open descriptor: it keeps reading a file renamed or deleted after it was opened."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def size(self) -> int:
        return os.fstat(self.fd).st_size

    def read_at(self, offset: int, n: int) -> bytes:
        return os.pread(self.fd, n, offset) if n > 0 else b""

    def stat(self) -> Stat:
        return to_stat(os.fstat(self.fd))

    def identity(self) -> DevInode:
        return dev_inode(os.fstat(self.fd))

    def close(self) -> None:
        os.close(self.fd)


class LocalFS:
    def __init__(self, opener: Opener = default_opener) -> None:
        self._opener = opener

    def stat(self, path: str) -> Stat:
        return to_stat(os.stat(path))

    def listdir(self, path: str) -> list[DirEntry]:
        out = []
        with os.scandir(path or ".") as it:
            for e in it:
                try:
                    st = e.stat()
                except OSError:
                    continue
                if statmod.S_ISREG(st.st_mode):
                    out.append(DirEntry(e.name, to_stat(st)))
        return out

    def open(self, path: str) -> LocalHandle:
        return LocalHandle(self._opener(path))

    def realpath(self, path: str) -> str:
        return os.path.realpath(path)
