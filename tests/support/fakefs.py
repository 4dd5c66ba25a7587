"""An in-memory ``FileSystem`` a writer can rotate under, with local or SFTP semantics.

``inodes=True`` behaves like a local disk: stat reports a ``DevInode`` and
mtimes in nanoseconds. ``inodes=False`` behaves like SFTP: no inode (a handle
knows its file only by the ``HeadHash`` of its head) and whole-second mtimes.
Either way an open handle stays bound to its file across renames, deletes
and truncation, as on POSIX. The writer side (``write``, ``rename``, ...)
is what the model test's ``Writer`` drives, the same calls as on a real disk.
``cut_in = n`` makes the n-th I/O call from now, and every one after it until
``down`` is reset, fail as a dropped connection does.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from itertools import count

from acceptmon.sources.rotation import FINGERPRINT_BYTES, fingerprint
from acceptmon.sources.tail.fs import DevInode, DirEntry, FileId, HeadHash, Stat

_NS = 1_000_000_000


@dataclass
class Inode:
    ino: int
    data: bytearray = field(default_factory=bytearray)
    mtime_ns: int = 0


class FakeHandle:
    def __init__(self, fs: FakeFS, inode: Inode) -> None:
        self._fs = fs
        self.inode = inode
        self.closed = False

    def size(self) -> int:
        self._fs.io()
        return len(self.inode.data)

    def stat(self) -> Stat:
        self._fs.io()
        return self._fs.stat_of(self.inode)

    def read_at(self, offset: int, n: int) -> bytes:
        assert not self.closed, "read from a closed handle"
        self._fs.io()
        return bytes(self.inode.data[offset : offset + max(0, n)])

    def identity(self) -> FileId | None:
        if self._fs.inodes:
            return DevInode(1, self.inode.ino)
        head = self.read_at(0, FINGERPRINT_BYTES)
        return HeadHash.of(fingerprint(head)) if head else None

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._fs.open_handles -= 1


class FakeFS:
    def __init__(self, *, inodes: bool = False, now_ns: int = 100 * _NS) -> None:
        self.inodes = inodes
        self.files: dict[str, Inode] = {}
        #: Directory mtimes: a directory changes when names in it come and go.
        self.dirs: dict[str, int] = {}
        self.now_ns = now_ns
        self.open_handles = 0
        self._ino = count(1)
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
        inode = self.files.get(path)
        if inode is None:
            inode = self.files[path] = Inode(next(self._ino))
            self._touch_dir(path)
        inode.data += data
        inode.mtime_ns = self.now_ns

    def append(self, path: str, *lines: str, end: str = "\n") -> None:
        self.write(path, "".join(f"{line}{end}" for line in lines).encode())

    def create(self, path: str, data: bytes = b"") -> None:
        """A new file at ``path`` (the old one, if any, lives on in open handles)."""
        self.files[path] = Inode(next(self._ino), bytearray(data), self.now_ns)
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

    # -- FileSystem ----------------------------------------------------------------------

    def stat(self, path: str) -> Stat:
        self.io()
        if path in self.dirs and path not in self.files:
            return Stat(0, self._mtime(self.dirs[path]), None, regular=False)
        return self.stat_of(self._inode(path))

    def stat_of(self, inode: Inode) -> Stat:
        identity = DevInode(1, inode.ino) if self.inodes else None
        return Stat(len(inode.data), self._mtime(inode.mtime_ns), identity)

    def realpath(self, path: str) -> str:
        return path

    def _mtime(self, ns: int) -> int:
        return ns if self.inodes else ns // _NS * _NS

    def _touch_dir(self, path: str) -> None:
        d = posixpath.dirname(path)
        self.dirs[d] = max(self.now_ns, self.dirs.get(d, 0) + 1)

    def listdir(self, path: str) -> list[DirEntry]:
        self.io()
        names = [p for p in self.files if posixpath.dirname(p) == path]
        return [DirEntry(posixpath.basename(p), self.stat(p)) for p in sorted(names)]

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
