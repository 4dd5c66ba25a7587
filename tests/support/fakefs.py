"""An in-memory ``FileSystem`` (``sources.tail.fs``) a writer can rotate under, as SFTP shows it.

SFTP semantics: no inode (a handle knows its file only by the ``HeadHash`` of
its head), whole-second mtimes, and an open handle stays bound to the file it
opened across rename, delete and truncation, as a POSIX sftp-server's does.
The writer's side (``write``, ``rename``, ``truncate``, ...) is what the model
test's writer and logrotate drive. ``cut_in = n`` makes the n-th I/O call from
now, and every one after it until ``down`` is reset, fail as a dropped
connection does; ``open_handles`` tells whether the follower closed what it opened.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field

from acceptmon.sources.rotation import FINGERPRINT_BYTES, fingerprint
from acceptmon.sources.tail.fs import DirEntry, HeadHash, Stat

_NS = 1_000_000_000


@dataclass
class Inode:
    data: bytearray = field(default_factory=bytearray)
    mtime_ns: int = 0


class FakeHandle:
    def __init__(self, fs: FakeFS, inode: Inode) -> None:
        self._fs = fs
        self.inode = inode
        self.closed = False

    def size(self) -> int:
        self._io()
        return len(self.inode.data)

    def read_at(self, offset: int, n: int) -> bytes:
        self._io()
        return bytes(self.inode.data[offset : offset + max(0, n)])

    def identity(self) -> HeadHash | None:
        head = self.read_at(0, FINGERPRINT_BYTES)
        return HeadHash.of(fingerprint(head)) if head else None

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._fs.open_handles -= 1

    def _io(self) -> None:
        assert not self.closed, "I/O on a closed handle"
        self._fs.io()


class FakeFS:
    def __init__(self, now_ns: int = 100 * _NS) -> None:
        self.files: dict[str, Inode] = {}
        self.now_ns = now_ns
        self.open_handles = 0
        #: I/O calls until the connection drops (None: it does not).
        self.cut_in: int | None = None
        self.down = False

    def io(self) -> None:
        """Count one I/O call against ``cut_in``; fail it if the connection is (now) down."""
        if self.cut_in is not None:
            self.cut_in -= 1
            if self.cut_in <= 0:
                self.cut_in, self.down = None, True
        if self.down:
            raise ConnectionResetError("connection lost")

    # -- the writer's side ---------------------------------------------------------------

    def write(self, path: str, data: bytes) -> None:
        """Append ``data``, creating the file if needed (``open(path, "ab")``)."""
        inode = self.files.setdefault(path, Inode())
        inode.data += data
        inode.mtime_ns = self.now_ns

    def append(self, path: str, *lines: str, end: str = "\n") -> None:
        self.write(path, "".join(f"{line}{end}" for line in lines).encode())

    def create(self, path: str, data: bytes = b"") -> None:
        """A new file at ``path`` (the old one, if any, lives on in open handles)."""
        self.files[path] = Inode(bytearray(data), self.now_ns)

    def rename(self, a: str, b: str) -> None:
        self.files[b] = self.files.pop(a)

    def delete(self, path: str) -> None:
        del self.files[path]

    def truncate(self, path: str, size: int = 0) -> None:
        inode = self.files[path]
        del inode.data[size:]
        inode.mtime_ns = self.now_ns

    def copytruncate(self, a: str, b: str) -> None:
        self.create(b, bytes(self.files[a].data))
        self.truncate(a)

    def set_mtime(self, path: str, ns: int) -> None:
        self.files[path].mtime_ns = ns

    def exists(self, path: str) -> bool:
        return path in self.files

    def read(self, path: str) -> bytes:
        return bytes(self.files[path].data)

    def names(self) -> list[str]:
        return sorted(self.files)

    # -- FileSystem ----------------------------------------------------------------------

    def stat(self, path: str) -> Stat:
        self.io()
        inode = self._inode(path)
        return Stat(len(inode.data), inode.mtime_ns // _NS * _NS)

    def listdir(self, path: str) -> list[DirEntry]:
        self.io()
        found = sorted(
            ((p, i) for p, i in self.files.items() if posixpath.dirname(p) == path), key=lambda x: x[0]
        )
        return [DirEntry(posixpath.basename(p), len(i.data), i.mtime_ns // _NS * _NS) for p, i in found]

    def open(self, path: str) -> FakeHandle:
        self.io()
        handle = FakeHandle(self, self._inode(path))
        self.open_handles += 1
        return handle

    def _inode(self, path: str) -> Inode:
        inode = self.files.get(path)
        if inode is None:
            raise FileNotFoundError(2, "No such file or directory", path)
        return inode
