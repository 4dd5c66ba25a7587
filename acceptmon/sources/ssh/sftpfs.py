"""``FileSystem`` (``sources.tail.fs``) over a paramiko ``SFTPClient``.

Reads go through an open handle, which on a POSIX server stays bound to the
file it opened even if the path is renamed meanwhile; the follower relies on
that to check a fingerprint and read data from the same file. SFTP has no
inode and whole-second mtimes: a file's identity is the ``HeadHash`` of its head.
"""

from __future__ import annotations

import stat as statmod
from collections.abc import Callable
from typing import Any, cast

import paramiko
from paramiko.sftp import CMD_CLOSE, CMD_HANDLE, CMD_NAME, CMD_OPENDIR, CMD_READDIR, SFTPError

from acceptmon.sources.rotation import FINGERPRINT_BYTES, fingerprint
from acceptmon.sources.tail.fs import DirEntry, HeadHash, Stat

_NS = 1_000_000_000


class SFTPHandle:
    def __init__(self, handle: paramiko.SFTPFile) -> None:
        self._f = handle

    def size(self) -> int:
        return int(self._f.stat().st_size or 0)

    def stat(self) -> Stat:
        return _stat(self._f.stat())

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
    #: SFTP (version 3) carries mtimes in whole seconds.
    mtime_resolution_ns = _NS
    #: Scans run on the host's worker thread: they never sleep.
    scan_backoff_s = 0.0

    def __init__(self, sftp: paramiko.SFTPClient) -> None:
        self._sftp = sftp

    def stat(self, path: str) -> Stat:
        return _stat(self._sftp.stat(remote_bytes(path)))

    def listdir(self, path: str, want: Callable[[str], bool] | None = None) -> list[DirEntry]:
        return [
            DirEntry(a.filename, int(a.st_size or 0), int(a.st_mtime or 0) * _NS)
            for a in listdir_attr(self._sftp, path or "/")
            if (a.st_mode is None or statmod.S_ISREG(a.st_mode)) and (want is None or want(a.filename))
        ]

    def open(self, path: str) -> SFTPHandle:
        return SFTPHandle(self._sftp.open(remote_bytes(path), "rb"))

    def realpath(self, path: str) -> str:
        return path

    def read_small(self, path: str, max_bytes: int) -> bytes | None:
        """The whole file if it has at most ``max_bytes``, else None."""
        with self._sftp.open(remote_bytes(path), "rb") as f:
            if int(f.stat().st_size or 0) > max_bytes:
                return None
            data = bytes(f.read(max_bytes + 1))
        return data if len(data) <= max_bytes else None


def _stat(st: paramiko.SFTPAttributes) -> Stat:
    """Whole-second mtime; no identity (SFTP has no inodes)."""
    regular = st.st_mode is None or statmod.S_ISREG(st.st_mode)
    return Stat(int(st.st_size or 0), int(st.st_mtime or 0) * _NS, None, regular)


def remote_bytes(path: str) -> bytes:
    """A remote path as the server named it (``listdir_attr`` read it as ``os.fsdecode`` would)."""
    return path.encode("utf-8", "surrogateescape")


def listdir_attr(sftp: paramiko.SFTPClient, path: str) -> list[paramiko.SFTPAttributes]:
    """``sftp.listdir_attr`` for names that need not be UTF-8: paramiko decodes every name
    strictly, so one such file failed the whole listing (and the host's connection) for good.
    Names are read with ``surrogateescape``; ``remote_bytes`` gives the server its bytes back."""
    client = cast(Any, sftp)  # paramiko's request layer, the one its listdir_attr uses
    kind, msg = client._request(CMD_OPENDIR, client._adjust_cwd(remote_bytes(path)))
    if kind != CMD_HANDLE:
        raise SFTPError("Expected handle")
    handle = msg.get_binary()
    out: list[paramiko.SFTPAttributes] = []
    try:
        while True:
            try:
                kind, msg = client._request(CMD_READDIR, handle)
            except EOFError:
                break
            if kind != CMD_NAME:
                raise SFTPError("Expected name response")
            for _ in range(msg.get_int()):
                name = msg.get_string().decode("utf-8", "surrogateescape")
                msg.get_string()  # the long name (ls -l text), not used
                attr = cast(Any, paramiko.SFTPAttributes)._from_msg(msg)
                attr.filename = name
                if name not in (".", ".."):
                    out.append(attr)
    finally:
        client._request(CMD_CLOSE, handle)
    return out
