"""Follow one remote path over SFTP across rotation, truncation and reconnects.

SFTP has no inode, so a file is known by a fingerprint of its first bytes
(upgraded as it grows to ``FINGERPRINT_BYTES``). Every read re-checks that
fingerprint through the same handle it reads from, so a rotation between two
looks can never splice two files. When the path no longer holds our file
(rename+create, copytruncate, a reconnect after either) the file is found by
fingerprint among the rotated siblings and read to its end, then every newer
sibling in age order, then the path again from offset 0: nothing is lost and
nothing is read twice. All I/O goes through a ``FileSystem`` so unit tests drive
this with an in-memory filesystem and a manual clock.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Protocol

from acceptmon.clock import Clock
from acceptmon.model import Position
from acceptmon.sources.lines import LineSplitter
from acceptmon.sources.rotation import FINGERPRINT_BYTES, FileState, classify, fingerprint
from acceptmon.sources.ssh.names import siblings_oldest_first
from acceptmon.sources.tail.entry import Entry
from acceptmon.sources.tail.fs import DirEntry, FileSystem, Handle, HeadHash, Stat

#: One SFTP read request asks for this much (paramiko's own request size).
READ_BYTES = 32 * 1024

#: With coarse mtimes (``FileSystem.mtime_resolution_ns``: whole seconds over SFTP) a
#: same-size rewrite within a tick of our last look leaves the stat unchanged, so an
#: unchanged stat is trusted only after one more full look this many ticks later (a margin).
TRUST_AFTER_TICKS = 2


@dataclass
class Cursor:
    """The file being read: how to recognise it, and how far it was handed out."""

    identity: HeadHash
    fp: str
    fp_len: int
    offset: int
    lineno: int
    where: str

    def entry(self) -> Entry:
        """The checkpoint entry for this file as far as it was read."""
        return Entry(self.identity, self.offset, self.lineno, self.fp, self.fp_len, self.where)


class Sink(Protocol):
    def room(self) -> int:
        """Bytes the output buffer can still take (back-pressure)."""
        ...

    def emit(self, path: str, lines: list[str], lineno: int, end: Position, cursor: Cursor) -> None: ...

    def note(self, event: str, detail: str) -> None:
        """``rotation``, ``truncation`` or ``lost`` (our file vanished unread)."""
        ...

    def known(self, path: str, heads: Known) -> None:
        """The rotated files there were when ``path`` had nothing to read yet (to checkpoint)."""
        ...


#: Fingerprints (hash, length) of the heads of rotated files that are not ours to read.
Known = tuple[tuple[str, int], ...]


class Follower:
    """Reads one remote path; ``step`` does bounded I/O and never sleeps."""

    def __init__(
        self, path: str, sink: Sink, clock: Clock, settle: float = 0.5, step_bytes: int = 1 << 20
    ) -> None:
        self.path = path
        self._dir, self._base = posixpath.split(path)
        self._sink = sink
        self._clock = clock
        self._settle = settle
        self._step_bytes = step_bytes
        self.cur: Cursor | None = None
        self._done = False
        self._pos = 0
        self._split = LineSplitter()
        #: The path's (size, mtime) at the last full look that found nothing new, when, and
        #: whether a later look confirmed it (then the stat alone says "unchanged").
        self._seen: tuple[int, int] | None = None
        self._seen_at = 0.0
        self._confirmed = False
        #: How long after a full look an unchanged stat is trusted (set from the filesystem).
        self._trust_after = 0.0
        self._eof: tuple[int, float] | None = None
        #: Rotated files that are not ours to read: those there when we began to wait, or
        #: older than the file we adopted (None: not looked yet). After our file is lost
        #: without trace, everything else rotated is newer and is read.
        self.known: Known | None = None
        #: The first bytes of the file being read, as fingerprinted (memory only: log lines
        #: may hold secrets); a copy cut short of the fingerprint is known by them.
        self._head_bytes = b""
        #: Siblings found to be history, by name, with the (size, mtime) they had then.
        self._history: dict[str, tuple[int, int]] = {}
        self.lag = 0

    @property
    def overlong(self) -> int:
        """Lines dropped for exceeding the line size limit."""
        return self._split.overlong

    @property
    def idle(self) -> bool:
        """Nothing half-read: the follower can be dropped without losing lines."""
        return self.cur is None or self._done

    def restore(self, e: Entry) -> None:
        """Resume from a checkpoint entry (one ``Cursor.entry`` wrote)."""
        identity = e.identity if isinstance(e.identity, HeadHash) else HeadHash.of(e.fingerprint)
        self.cur = Cursor(identity, e.fingerprint, e.fp_len, e.offset, e.lineno, e.real or self.path)
        self._head_bytes = b""
        self._done = False
        self.resync()

    def resync(self) -> None:
        """Forget partial reads (after a reconnect): re-read from the last line boundary."""
        self._split.reset()
        self._pos = self.cur.offset if self.cur else 0
        self._seen = None
        self._eof = None

    def step(self, fs: FileSystem) -> bool:
        """Do some I/O; True if more work is ready now (call again without waiting).

        Raises FileNotFoundError/PermissionError when the followed path itself
        is unusable; other exceptions are the connection's.
        """
        self._trust_after = TRUST_AFTER_TICKS * fs.mtime_resolution_ns / 1e9
        cur = self.cur
        if cur is not None and not self._done and cur.where != self.path:
            return self._drain_sibling(fs, cur)
        try:
            st = fs.stat(self.path)
        except FileNotFoundError:
            if cur is not None and not self._done:
                return self._relocate(fs, cur, "rotation")
            if cur is None and self._wait(fs, None):
                return True
            if cur is not None and self._done and self._after(fs, cur, None):
                return True  # a newer rotated file, while the path itself is gone
            raise
        if cur is None:
            return self._wait(fs, st)
        if self._done:
            return self._after(fs, cur, st)
        if self._unchanged(st):
            return False
        return self._read_path(fs, cur, st)

    def _verify(self, f: Handle, cur: Cursor) -> tuple[str, int]:
        """Classify the open file against the cursor; upgrade a short fingerprint."""
        size = f.size()
        head = f.read_at(0, min(size, FINGERPRINT_BYTES)) if size else b""
        now_fp = cur.fp if self._matches(head, cur) else "other"
        before = FileState("", cur.offset, cur.fp, cur.fp_len)
        change = classify(before, FileState("", size, now_fp, cur.fp_len), cur.offset)
        if change in ("grown", "unchanged") and len(head) > cur.fp_len:
            cur.fp, cur.fp_len, self._head_bytes = fingerprint(head), len(head), head
        return change, size

    def _matches(self, head: bytes, cur: Cursor) -> bool:
        """Whether a file starting with ``head`` holds our file's content, maybe cut short (a copy)."""
        if len(head) >= cur.fp_len:
            return fingerprint(head[: cur.fp_len]) == cur.fp
        return bool(head) and self._head_bytes.startswith(head)

    def _read_path(self, fs: FileSystem, cur: Cursor, st: Stat) -> bool:
        try:
            f = fs.open(self.path)
        except FileNotFoundError:
            return self._relocate(fs, cur, "rotation")
        try:
            change, size = self._verify(f, cur)
            if change in ("truncated", "rotated", "replaced"):
                event = "truncation" if change == "truncated" else "rotation"
                return self._relocate(fs, cur, event)
            more = self._read(f, cur, size)
        finally:
            f.close()
        self._saw(st if self._pos >= size == st.size else None)
        return more

    def _read(self, f: Handle, cur: Cursor, size: int) -> bool:
        """Read up to the step budget and the buffer's room; True if more is waiting."""
        budget = self._step_bytes
        while self._pos < size and budget > 0:
            want = min(size - self._pos, budget, self._sink.room(), READ_BYTES)
            if want <= 0:
                break
            data = f.read_at(self._pos, want)
            if not data:
                break
            self._pos += len(data)
            budget -= len(data)
            if self._split.pending == 0 and data[0] == 0:
                stripped = data.lstrip(b"\0")  # a copytruncate hole under a non-O_APPEND writer
                cur.offset += len(data) - len(stripped)
                data = stripped
            self._feed(cur, data)
        self.lag = max(0, size - cur.offset)
        return self._pos < size and self._sink.room() > 0

    def _feed(self, cur: Cursor, data: bytes) -> None:
        over = self._split.overlong
        lines, consumed = self._split.feed(data)
        cur.offset += consumed
        first = cur.lineno
        cur.lineno += len(lines) + self._split.overlong - over
        if lines:
            self._sink.emit(self.path, lines, first, Position(str(cur.identity), cur.offset), cur)

    def _drain_sibling(self, fs: FileSystem, cur: Cursor) -> bool:
        """Finish the rotated file; it is done once its size has settled at EOF."""
        try:
            f = fs.open(cur.where)
        except FileNotFoundError:
            return self._relocate(fs, cur, None)
        try:
            change, size = self._verify(f, cur)
            if change in ("truncated", "rotated", "replaced"):
                return self._relocate(fs, cur, None)
            if self._pos < size:
                self._eof = None
                return self._read(f, cur, size) or self._pos >= size
        finally:
            f.close()
        now = self._clock.monotonic()
        if self._eof is None or self._eof[0] != size:
            self._eof = (size, now)
            return False
        if now - self._eof[1] < self._settle:
            return False
        if self._split.pending:  # nothing will ever end the last line: hand it out
            self._pos_flush(cur)
        self._done, self._eof = True, None
        self._saw(None)
        return True

    def _pos_flush(self, cur: Cursor) -> None:
        pending = self._split.pending
        lines, _ = self._split.feed(b"\n")
        cur.offset += pending
        first = cur.lineno
        cur.lineno += len(lines)
        if lines:
            self._sink.emit(self.path, lines, first, Position(str(cur.identity), cur.offset), cur)

    def _candidates(self, fs: FileSystem) -> list[tuple[str, DirEntry]] | None:
        """Siblings oldest first, then the path itself; None while names are shifting."""
        listing = fs.listdir(self._dir)
        sibs = siblings_oldest_first(self._base, listing)
        if siblings_oldest_first(self._base, fs.listdir(self._dir)) != sibs:
            return None
        out = [(posixpath.join(self._dir, e.name), e) for e in sibs]
        out += [(self.path, e) for e in listing if e.name == self._base]
        return out

    def _holds(self, fs: FileSystem, path: str, cur: Cursor) -> bool:
        head = self._raw_head(fs, path)
        return head is not None and self._matches(head, cur)

    def _find(
        self, fs: FileSystem, cands: list[tuple[str, DirEntry]], cur: Cursor, min_size: int
    ) -> int | None:
        """Index of the newest candidate holding the cursor's file (the path is tried first)."""
        for i in reversed(range(len(cands))):
            path, e = cands[i]
            if e.size >= min_size and e.size > 0 and self._holds(fs, path, cur):
                return i
        return None

    def _find_copy(self, fs: FileSystem, sibs: list[tuple[str, DirEntry]], cur: Cursor) -> int | None:
        """Index of the newest sibling that starts like our file but ends before our offset."""
        for i in reversed(range(len(sibs))):
            path, e = sibs[i]
            if 0 < e.size < cur.offset and self._holds(fs, path, cur):
                return i
        return None

    def _relocate(self, fs: FileSystem, cur: Cursor, event: str | None) -> bool:
        """Our file left the path (or its sibling name): find it again by fingerprint.

        Found in a sibling: a rotation (rename or copytruncate look the same
        over SFTP). Not found after the path shrank: an in-place truncation,
        so the path is read again from 0. Not found otherwise: deleted or
        compressed before we got to its end.
        """
        cands = self._candidates(fs)
        if cands is None:
            return False
        i = self._find(fs, cands, cur, cur.offset)
        sibs = [c for c in cands if c[0] != self.path]
        j = self._find_copy(fs, sibs, cur) if i is None else None
        if j is not None:
            # copytruncate under a running writer: its copy ended before what we read
            # (the rest is in no file); what was rotated after it comes next.
            self._sink.note("rotation", f"{self.path}: read past the end of its copy {sibs[j][0]}")
            cur.where, self._done = sibs[j][0], True
            self.resync()
            return True
        if i is None:
            if event == "truncation":
                self._sink.note("truncation", f"{self.path} was truncated; reading it from the start")
            else:
                self._sink.note(
                    "lost",
                    f"{self.path}: {cur.identity} is gone; lines after byte {cur.offset} were not read",
                )
            # Whatever else was rotated since we adopted our file is newer: read it next.
            self.known = (*(self.known or ()), (cur.fp, cur.fp_len))
            self.cur, self._done = None, False
            self.resync()
            return True
        where = cands[i][0]
        if where != cur.where:
            self._sink.note("rotation", f"{self.path}: finishing {where}")
        cur.where = where
        self.resync()
        return True

    def _after(self, fs: FileSystem, done: Cursor, st: Stat | None) -> bool:
        """Our file is finished: start the next newer one (a sibling, else the path)."""
        if st is not None and self._unchanged(st):
            return False
        cands = self._candidates(fs)
        if cands is None:
            return False
        sibs = [c for c in cands if c[0] != self.path]
        i = self._find(fs, sibs, done, done.offset)
        if i is None:
            i = self._find_copy(fs, sibs, done)
        if i is None:
            # Gone (deleted, compressed): everything rotated that is not older is newer.
            self._sink.note("lost", f"{self.path}: lost track of {done.identity}; reading what is newer")
            self.known = (*(self.known or ()), (done.fp, done.fp_len))
            self.cur, self._done = None, False
            self.resync()
            return True
        for k in range(i + 1, len(sibs)):
            if sibs[k][1].size > 0:
                return self._adopt(fs, sibs[k][0], self._heads(fs, sibs[:k]))
        if any(p == self.path and e.size > 0 for p, e in cands):
            return self._adopt(fs, self.path, self._heads(fs, sibs))
        self._saw(st)
        return False

    def _unchanged(self, st: Stat) -> bool:
        """Whether the path surely still holds what the last full look found."""
        if self._seen != (st.size, st.mtime_ns):
            return False
        return self._confirmed or self._clock.monotonic() - self._seen_at < self._trust_after

    def _saw(self, st: Stat | None) -> None:
        """Remember the stat of a full look that found nothing new (None: something was)."""
        key = None if st is None else (st.size, st.mtime_ns)
        now = self._clock.monotonic()
        if key is not None and key == self._seen:
            self._confirmed = self._confirmed or now - self._seen_at >= self._trust_after
        else:
            self._seen, self._seen_at, self._confirmed = key, now, False

    def _wait(self, fs: FileSystem, st: Stat | None) -> bool:
        """Nothing to read: start a file rotated through the path meanwhile, else the path.

        The rotated files in ``known`` are history, not ours; a sibling that
        starts like the path is its copy (copytruncate), not news. A directory
        we may not list has no siblings we can know of: the path only.
        """
        try:
            cands = self._candidates(fs)
        except PermissionError:
            cands = []
        if cands is None:
            return False
        sibs = [(p, e) for p, e in cands if p != self.path]
        if self.known is None:
            self.known = self._heads(fs, sibs)
            self._sink.known(self.path, self.known)
            older = self.known
        else:
            path_head = (self._raw_head(fs, self.path) if st is not None and st.size else None) or b""
            older = self.known
            for p, e in sibs:
                if self._history.get(p) == (e.size, e.mtime_ns):
                    continue  # judged history before, unchanged since: no need to open it again
                head = self._raw_head(fs, p) if e.size else None
                if not head:
                    continue
                if self._is_known(head):
                    self._history[p] = (e.size, e.mtime_ns)
                    continue
                if not path_head.startswith(head):
                    return self._adopt(fs, p, older)
                older = (*older, (fingerprint(head), len(head)))
        return self._adopt(fs, self.path, older) if st is not None and st.size > 0 else False

    def _heads(self, fs: FileSystem, sibs: list[tuple[str, DirEntry]]) -> Known:
        return tuple(k for p, e in sibs if e.size and (k := self._head(fs, p)) is not None)

    def _is_known(self, head: bytes) -> bool:
        """Whether a rotated file starting with ``head`` is history (or a copy of our lost file)."""
        if any(len(head) >= n and fingerprint(head[:n]) == fp for fp, n in self.known or ()):
            return True
        return self.cur is None and self._head_bytes.startswith(head)

    def _raw_head(self, fs: FileSystem, path: str) -> bytes | None:
        try:
            f = fs.open(path)
        except (FileNotFoundError, PermissionError):
            return None
        try:
            return f.read_at(0, FINGERPRINT_BYTES)
        finally:
            f.close()

    def _head(self, fs: FileSystem, path: str) -> tuple[str, int] | None:
        head = self._raw_head(fs, path)
        return (fingerprint(head), len(head)) if head else None

    def _adopt(self, fs: FileSystem, path: str, older: Known) -> bool:
        """Start a file from offset 0; its identity is the fingerprint at first sight.

        ``older``: the rotated files older than it (history once we read it).
        """
        f = fs.open(path)
        try:
            identity = f.identity()
            head = f.read_at(0, FINGERPRINT_BYTES)
        finally:
            f.close()
        if not head or not isinstance(identity, HeadHash):
            return False
        self.cur = Cursor(identity, fingerprint(head), len(head), 0, 1, path)
        self._head_bytes, self.known, self._history = head, older, {}
        self._sink.known(self.path, older)
        self._done = False
        self.resync()
        return True
