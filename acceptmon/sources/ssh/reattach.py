"""A ``FileSystem`` that outlives SFTP connections: its handles find their files again.

The follower keeps files open across polls (a rotated file is finished through
the handle that opened it). An SFTP handle dies with its connection, so each
handle here remembers its file's first bytes and how far it has seen it, and
after a reconnect reopens the file: at the path it was opened at, else under
another name of its log (the log's or a rotated one, newest first). A file found nowhere is gone
(``FileNotFoundError``), as a deleted file would be. Failures while the
connection is down raise ``Disconnected``, never an ``OSError``: the follower
must not take a dropped connection for a missing file.
"""

from __future__ import annotations

import contextlib
import posixpath
from collections.abc import Callable
from typing import TypeVar

from acceptmon.sources.rotation import FINGERPRINT_BYTES, is_rotated_name
from acceptmon.sources.tail.fs import DirEntry, FileId, FileSystem, Handle, Stat

_T = TypeVar("_T")

#: Rounds of "the path, then its listed siblings" before a file is taken for gone.
FIND_TRIES = 2


class Disconnected(Exception):
    """The connection dropped during a call; ``__cause__`` is what the transport raised."""


class ReattachingFS:
    """Delegates to the current connection's filesystem (``bind``); ``reconnected`` starts a new one."""

    def __init__(self) -> None:
        self._fs: FileSystem | None = None
        self._alive: Callable[[], bool] = lambda: True
        #: Bumped at every new connection: handles from an older one reopen their file.
        self.generation = 0

    def bind(self, fs: FileSystem, alive: Callable[[], bool]) -> None:
        self._fs, self._alive = fs, alive

    def reconnected(self) -> None:
        self.generation += 1

    @property
    def inner(self) -> FileSystem:
        assert self._fs is not None, "bind() before any I/O"
        return self._fs

    @property
    def mtime_resolution_ns(self) -> int:
        return self.inner.mtime_resolution_ns

    @property
    def scan_backoff_s(self) -> float:
        return 0.0  # the host's worker thread never sleeps

    def call(self, fn: Callable[[], _T]) -> _T:
        """``fn()``, with a failure of a dead connection raised as ``Disconnected``."""
        try:
            return fn()
        except OSError as e:
            if not self._alive():
                raise Disconnected(str(e)) from e
            raise

    def stat(self, path: str) -> Stat:
        return self.call(lambda: self.inner.stat(path))

    def listdir(self, path: str, want: Callable[[str], bool] | None = None) -> list[DirEntry]:
        return self.call(lambda: self.inner.listdir(path, want))

    def realpath(self, path: str) -> str:
        return self.call(lambda: self.inner.realpath(path))

    def open(self, path: str) -> ReattachingHandle:
        h = self.call(lambda: self.inner.open(path))
        try:
            head = self.call(lambda: h.read_at(0, FINGERPRINT_BYTES))
        except BaseException:
            h.close()
            raise
        return ReattachingHandle(self, path, h, head)


class ReattachingHandle:
    def __init__(self, fs: ReattachingFS, path: str, h: Handle, head: bytes) -> None:
        self._fs = fs
        self._path = path
        self._h: Handle | None = h
        self._generation = fs.generation
        self._head = head
        self._seen = len(head)

    def _handle(self) -> Handle:
        if self._h is None or self._generation != self._fs.generation:
            self._h = None  # died with its connection
            self._h = self._fs.call(self._find)
            self._generation = self._fs.generation
        return self._h

    def _find(self) -> Handle:
        """Our file again: it starts with the head we saw and is at least as long as we saw it.

        The path is tried before the directory is listed, and the listing once more
        if no name held it: a rotation between a listing and the open of the path
        moves our file to a name that listing did not have (it was taken for gone).
        """
        for _ in range(FIND_TRIES):
            found = self._open_ours(self._path)
            if found is not None:
                return found
            for path in self._siblings_newest_first():
                found = self._open_ours(path)
                if found is not None:
                    return found
        raise FileNotFoundError(2, "gone while the connection was down", self._path)

    def _siblings_newest_first(self) -> list[str]:
        directory, name = posixpath.split(self._path)
        base = _log_name(name)
        try:
            sibs = self._fs.inner.listdir(
                directory or ".", lambda n: n != name and (n == base or is_rotated_name(base, n))
            )
        except PermissionError:
            return []
        return [
            posixpath.join(directory, e.name) for e in sorted(sibs, key=lambda e: e.mtime_ns, reverse=True)
        ]

    def _open_ours(self, path: str) -> Handle | None:
        try:
            h = self._fs.inner.open(path)
        except (FileNotFoundError, PermissionError):
            return None
        if h.size() >= self._seen and h.read_at(0, len(self._head)) == self._head:
            return h
        h.close()
        return None

    def _note(self, size: int) -> int:
        self._seen = max(self._seen, size)
        return size

    def _sized(self, size: int) -> int:
        """A look at the file's size now: a shrink is a truncation in place."""
        if size < self._seen:
            self._relearn(self._fs.call(lambda: self._handle().read_at(0, FINGERPRINT_BYTES)), size)
        return self._note(size)

    def _relearn(self, head: bytes, size: int) -> None:
        """The file was truncated (and maybe refilled) in place: what we saw of it is its copy's
        now, so it is found again by what it holds now (else a reconnect reopens the copy)."""
        self._head = head[:FINGERPRINT_BYTES]
        self._seen = max(size, len(self._head))

    def size(self) -> int:
        return self._sized(self._fs.call(lambda: self._handle().size()))

    def stat(self) -> Stat:
        st = self._fs.call(lambda: self._handle().stat())
        self._sized(st.size)
        return st

    def read_at(self, offset: int, n: int) -> bytes:
        data = self._fs.call(lambda: self._handle().read_at(offset, n))
        if offset == 0 and data[: len(self._head)] != self._head[: len(data)]:
            self._relearn(data, len(data))
        elif offset <= len(self._head) < FINGERPRINT_BYTES and offset + len(data) > len(self._head):
            self._head = (self._head + data[len(self._head) - offset :])[:FINGERPRINT_BYTES]
        self._note(offset + len(data))
        return data

    def identity(self) -> FileId | None:
        return self._fs.call(lambda: self._handle().identity())

    def close(self) -> None:
        h, self._h = self._h, None
        if h is not None and self._generation == self._fs.generation:
            with contextlib.suppress(Disconnected):  # the server forgets it with the connection
                self._fs.call(h.close)


def _log_name(name: str) -> str:
    """The log a (maybe rotated) file name belongs to: ``app.log`` for ``app.log.3``."""
    for i in range(1, len(name)):
        if name[i] in ".-_" and is_rotated_name(name[:i], name):
            return name[:i]
    return name
