"""One open file turned into Chunks, with the positions a checkpoint needs.

A stream outlives its path: it keeps reading a renamed or deleted file through
its handle, and after copytruncate it moves to the copy (same bytes, new
inode) so the lines between our offset and the truncation are not lost.
"""

from __future__ import annotations

from collections.abc import Sequence

from acceptmon.model import Chunk, Position
from acceptmon.sources.container.splitter import ContainerSplitter
from acceptmon.sources.lines import MAX_LINE_BYTES
from acceptmon.sources.rotation import FINGERPRINT_BYTES, FileState, fingerprint
from acceptmon.sources.tail.entry import Entry, Marks
from acceptmon.sources.tail.fs import FileId, Handle, Stat

#: What we know of a file's first bytes beyond its fingerprint: the bytes themselves
#: while we follow it (memory only: log lines may hold secrets), else its ``Marks``.
Known = Marks | bytes


def line_marks(head: bytes) -> Marks:
    ends = [i + 1 for i, b in enumerate(head) if b == 0x0A]
    return tuple((n, fingerprint(head[:n])) for n in ends)


def known_prefix(known: Known, size: int) -> str | None:
    """The fingerprint of the first ``size`` bytes, if ``known`` tells it."""
    if isinstance(known, bytes):
        return fingerprint(known[:size]) if 0 < size <= len(known) else None
    return next((h for n, h in known if n == size), None)


class NoIdentityYet(OSError):
    """An empty file where there are no inodes: nothing tells it apart yet, so it is not followed yet."""


def identity_of(st: Stat) -> str:
    """The inode as checkpoints write it; "" where the filesystem has none (content tells files apart)."""
    return "" if st.identity is None else str(st.identity)


def file_id_of(h: Handle, st: Stat) -> FileId:
    """The open file's identity as its filesystem tells it: the inode in its stat, else the
    ``HeadHash`` of its first bytes now (taken once, at first sight, by a stream)."""
    found = st.identity if st.identity is not None else h.identity()
    if found is None:
        raise NoIdentityYet("an empty file has no identity yet where there are no inodes")
    return found


def prefix_fingerprint(h: Handle, length: int) -> str:
    """Fingerprint of the first ``length`` bytes, or "" if the file is shorter."""
    data = h.read_at(0, length) if length else b""
    return fingerprint(data) if len(data) == length else ""


class FileStream:
    """Reads one file from an offset; tracks handed-out and committed positions.

    ``emitted`` is the offset after the last line handed out, ``committed`` the
    offset after the last line the consumer processed. Only ``committed`` goes
    into checkpoints. ``real`` is the resolved path of the log this content
    was written as: its rotated copies are named after it.
    """

    def __init__(
        self, handle: Handle, real: str, start: int = 0, lineno: int = 1, *, max_line: int = MAX_LINE_BYTES
    ) -> None:
        st = handle.stat()
        self.handle: Handle | None = handle
        self.file_id = file_id_of(handle, st)
        self.identity = str(self.file_id)
        self.real = real
        self.size = st.size
        self.mtime_ns = st.mtime_ns
        self.fp = ""
        self.fp_len = 0
        self.head = b""
        self.emitted = start
        self.lineno = lineno
        self.committed = start
        self.committed_lineno = lineno
        self.splitter = ContainerSplitter(max_line)
        self.idle_since = 0.0
        #: A read found the leading bytes changed: look at the file before reading on.
        self.stale = False
        self.refresh_fingerprint()

    @property
    def read_pos(self) -> int:
        return self.emitted + self.splitter.pending

    def state(self) -> FileState:
        return FileState(self.identity, self.size, self.fp, self.fp_len)

    def refresh_fingerprint(self) -> bool:
        """Extend the fingerprint while the file is shorter than FINGERPRINT_BYTES.

        Returns False if the leading bytes no longer match (content replaced).
        """
        if self.handle is None:
            return True
        data = self.handle.read_at(0, FINGERPRINT_BYTES)
        if self.fp_len and len(data) < self.fp_len:
            # Shorter than what we fingerprinted: a copy cut short of it (copytruncate
            # under a running writer) still holds our bytes; anything else is replaced.
            return bool(data) and self.head.startswith(data)
        if self.fp_len and fingerprint(data[: self.fp_len]) != self.fp:
            return False
        if len(data) > self.fp_len:
            self.fp, self.fp_len = fingerprint(data), len(data)
            self.head = data
        return True

    def look(self, st: Stat) -> None:
        self.size, self.mtime_ns = st.size, st.mtime_ns

    def read(self, budget: int, source: str, path: str) -> tuple[Chunk | None, int]:
        """Read up to ``budget`` bytes; return a chunk of complete lines (if any) and bytes read."""
        assert self.handle is not None
        data = self.handle.read_at(self.read_pos, budget)
        if not data:
            return None, 0
        if not self.refresh_fingerprint():
            # The head changed under us (copytruncate, then the writer refilled
            # the file past our offset): these bytes may be the new content's.
            # Hand out nothing; the next look moves us to the copy.
            self.stale = True
            return None, 0
        nread = len(data)
        if self.splitter.pending == 0 and data[0] == 0:
            # A hole left by copytruncate under a writer without O_APPEND reads
            # as NULs; skip them so the first real line is not glued to them.
            data = data.lstrip(b"\0")
            self.emitted += nread - len(data)
        lines, consumed = self.splitter.feed(data)
        return self._emit(lines, consumed, source, path), nread

    def finish(self, source: str, path: str) -> Chunk | None:
        """Hand out an unterminated last line (or a container message still in pieces): nothing
        will ever complete it."""
        if self.splitter.pending == 0:
            return None
        self.emitted = self.read_pos
        lines, _ = self.splitter.finish()
        return self._emit(lines, 0, source, path)

    def _emit(self, lines: Sequence[str], consumed: int, source: str, path: str) -> Chunk | None:
        """A chunk of the lines, or None; ``lineno`` counts the raw file's lines (container pieces too)."""
        splitter = self.splitter
        self.emitted += consumed
        first = self.lineno
        self.lineno += splitter.lines_read
        errors = splitter.take_errors()
        if not lines and not errors:
            return None
        times = tuple(splitter.times) if splitter.times is not None else None
        end = Position(self.identity, self.emitted)
        return Chunk(source, tuple(lines), first, end, path, times, errors, splitter.text)

    def move_to(self, handle: Handle) -> None:
        """Continue in a byte-identical copy of this file (copytruncate)."""
        self.close()
        self.handle = handle
        self.stale = False
        st = handle.stat()
        # A head hash names content, and a copy has the same: only an inode changes.
        self.file_id = st.identity if st.identity is not None else self.file_id
        self.identity = str(self.file_id)
        self.look(st)

    def give_up_handle(self) -> Handle:
        """Hand the open file to a new stream (this one is about to move to a copy)."""
        assert self.handle is not None
        handle, self.handle = self.handle, None
        return handle

    def skip_to_end(self, window: int) -> None:
        """Start after the last complete line, counting the lines skipped so line numbers stay true."""
        assert self.handle is not None
        end = self.size
        tail = self.handle.read_at(end - min(window, end), min(window, end))
        cut = tail.rfind(b"\n")
        start = end - len(tail) + cut + 1 if cut >= 0 else end
        lines = 0
        for pos in range(0, start, window):
            lines += self.handle.read_at(pos, min(window, start - pos)).count(b"\n")
        self.emitted = self.committed = start
        self.lineno = self.committed_lineno = lines + 1

    def close(self) -> None:
        if self.handle is not None:
            self.handle.close()
            self.handle = None

    def entry(self) -> Entry:
        """Checkpoint entry: committed position plus what finds the file again."""
        return Entry(
            self.file_id,
            self.committed,
            self.committed_lineno,
            self.fp,
            self.fp_len,
            self.real,
            self.mtime_ns,
            line_marks(self.head),
        )
