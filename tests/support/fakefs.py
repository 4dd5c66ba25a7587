"""An in-memory ``FileSystem`` (``sources.tail.fs``) a writer can rotate under.

By default as SFTP shows it: no inode (a handle knows its file only by the
``HeadHash`` of its head) and whole-second mtimes; ``inodes=True`` gives local
semantics instead (``DevInode`` identities, nanosecond mtimes, directory
mtimes that change as names come and go). Either way an open handle stays
bound to the file it opened across rename, delete and truncation, as a local
descriptor and a POSIX sftp-server's handle do.
The writer's side (``write``, ``rename``, ``truncate``, ...) is what the model
test's writer and logrotate drive. ``cut_in = n`` makes the n-th I/O call from
now, and every one after it until ``down`` is reset, fail as a dropped
connection does; every handle open then dies with it, as an SFTP server's
handles do (the follower must find its files again after a reconnect).
``open_handles`` tells whether the follower closed what it opened.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import count

from acceptmon.sources.rotation import FINGERPRINT_BYTES, fingerprint
from acceptmon.sources.tail.fs import DevInode, DirEntry, HeadHash, Stat

_NS = 1_000_000_000


@dataclass
class Inode:
    data: bytearray = field(default_factory=bytearray)
    mtime_ns: int = 0
    ino: int = 0


class FakeHandle:
    def __init__(self, fs: FakeFS, inode: Inode) -> None:
        self._fs = fs
        self.inode = inode
        self.closed = False
        self.generation = fs.generation

    def size(self) -> int:
        self._io()
        return len(self.inode.data)

    def stat(self) -> Stat:
        self._io()
        return self._fs.stat_of(self.inode)

    def read_at(self, offset: int, n: int) -> bytes:
        self._io()
        return bytes(self.inode.data[offset : offset + max(0, n)])

    def identity(self) -> DevInode | HeadHash | None:
        if self._fs.inodes:
            self._io()
            return DevInode(1, self.inode.ino)
        head = self.read_at(0, FINGERPRINT_BYTES)
        return HeadHash.of(fingerprint(head)) if head else None

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            if self.generation == self._fs.generation:
                self._fs.open_handles -= 1

    def _io(self) -> None:
        assert not self.closed, "I/O on a closed handle"
        self._fs.io()
        if self.generation != self._fs.generation:
            raise ConnectionResetError("this handle died with its connection")


class FakeFS:
    def __init__(self, now_ns: int = 100 * _NS, *, inodes: bool = False) -> None:
        self.inodes = inodes
        self.mtime_resolution_ns = 1 if inodes else _NS
        #: Nothing renames behind an in-memory listing: no need to wait.
        self.scan_backoff_s = 0.0
        self.files: dict[str, Inode] = {}
        #: Directory mtimes: a directory changes when names in it come and go.
        self.dirs: dict[str, int] = {}
        self.now_ns = now_ns
        self._ino = count(1)
        self.open_handles = 0
        #: I/O calls until the connection drops (None: it does not).
        self.cut_in: int | None = None
        self.down = False
        #: Bumped when the connection drops: handles from before are dead.
        self.generation = 0

    def io(self) -> None:
        """Count one I/O call against ``cut_in``; fail it if the connection is (now) down."""
        if self.cut_in is not None:
            self.cut_in -= 1
            if self.cut_in <= 0:
                self.cut_in, self.down = None, True
                self.generation += 1
                self.open_handles = 0
        if self.down:
            raise ConnectionResetError("connection lost")

    # -- the writer's side ---------------------------------------------------------------

    def write(self, path: str, data: bytes) -> None:
        """Append ``data``, creating the file if needed (``open(path, "ab")``)."""
        inode = self.files.get(path)
        if inode is None:
            inode = self.files[path] = Inode(ino=next(self._ino))
            self._touch_dir(path)
        inode.data += data
        inode.mtime_ns = self.now_ns

    def append(self, path: str, *lines: str, end: str = "\n") -> None:
        self.write(path, "".join(f"{line}{end}" for line in lines).encode())

    def create(self, path: str, data: bytes = b"") -> None:
        """A new file at ``path`` (the old one, if any, lives on in open handles)."""
        self.files[path] = Inode(bytearray(data), self.now_ns, next(self._ino))
        self._touch_dir(path)

    def rename(self, a: str, b: str) -> None:
        self.files[b] = self.files.pop(a)
        self._touch_dir(a)
        self._touch_dir(b)

    def mkdir(self, path: str) -> None:
        self.dirs.setdefault(path, self.now_ns)

    def delete(self, path: str) -> None:
        del self.files[path]
        self._touch_dir(path)

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
        if path in self.dirs and path not in self.files:
            return Stat(0, self._mtime(self.dirs[path]), regular=False)
        return self.stat_of(self._inode(path))

    def stat_of(self, inode: Inode) -> Stat:
        identity = DevInode(1, inode.ino) if self.inodes else None
        return Stat(len(inode.data), self._mtime(inode.mtime_ns), identity)

    def listdir(self, path: str, want: Callable[[str], bool] | None = None) -> list[DirEntry]:
        self.io()
        found = sorted(
            ((p, i) for p, i in self.files.items() if posixpath.dirname(p) == path), key=lambda x: x[0]
        )
        out = []
        for p, i in found:
            name, st = posixpath.basename(p), self.stat_of(i)
            if want is None or want(name):
                out.append(DirEntry(name, st.size, st.mtime_ns, st.identity))
        return out

    def realpath(self, path: str) -> str:
        return path

    def open(self, path: str) -> FakeHandle:
        self.io()
        handle = FakeHandle(self, self._inode(path))
        self.open_handles += 1
        return handle

    def _mtime(self, ns: int) -> int:
        return ns // self.mtime_resolution_ns * self.mtime_resolution_ns

    def _touch_dir(self, path: str) -> None:
        d = posixpath.dirname(path)
        self.dirs[d] = max(self.now_ns, self.dirs.get(d, 0) + 1)

    def _inode(self, path: str) -> Inode:
        inode = self.files.get(path)
        if inode is None:
            raise FileNotFoundError(2, "No such file or directory", path)
        return inode
