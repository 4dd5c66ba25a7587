"""``FileSystem`` (``sources.tail.fs``) over a paramiko ``SFTPClient``.

Reads go through an open handle, which on a POSIX server stays bound to the
file it opened even if the path is renamed meanwhile; the follower relies on
that to check a fingerprint and read data from the same file. SFTP has no
inode and whole-second mtimes: a file's identity is the ``HeadHash`` of its head.
"""

from __future__ import annotations

import stat as statmod

import paramiko

from acceptmon.sources.rotation import FINGERPRINT_BYTES, fingerprint
from acceptmon.sources.tail.fs import DirEntry, HeadHash, Stat

_NS = 1_000_000_000


class SFTPHandle:
    def __init__(self, handle: paramiko.SFTPFile) -> None:
        self._f = handle

    def size(self) -> int:
        return int(self._f.stat().st_size or 0)

    def read_at(self, offset: int, n: int) -> bytes:
        if n <= 0:
            return b""
        self._f.seek(offset)
        return bytes(self._f.read(n))

    def identity(self) -> HeadHash | None:
        head = self.read_at(0, FINGERPRINT_BYTES)
        return HeadHash.of(fingerprint(head)) if head else None

    def close(self) -> None:
        self._f.close()


class SFTPFS:
    def __init__(self, sftp: paramiko.SFTPClient) -> None:
        self._sftp = sftp

    def stat(self, path: str) -> Stat:
        st = self._sftp.stat(path)
        return Stat(int(st.st_size or 0), int(st.st_mtime or 0) * _NS)

    def listdir(self, path: str) -> list[DirEntry]:
        return [
            DirEntry(a.filename, int(a.st_size or 0), int(a.st_mtime or 0) * _NS)
            for a in self._sftp.listdir_attr(path or "/")
            if a.st_mode is None or statmod.S_ISREG(a.st_mode)
        ]

    def open(self, path: str) -> SFTPHandle:
        return SFTPHandle(self._sftp.open(path, "rb"))

    def read_small(self, path: str, max_bytes: int) -> bytes | None:
        """The whole file if it has at most ``max_bytes``, else None."""
        with self._sftp.open(path, "rb") as f:
            if int(f.stat().st_size or 0) > max_bytes:
                return None
            data = bytes(f.read(max_bytes + 1))
        return data if len(data) <= max_bytes else None
