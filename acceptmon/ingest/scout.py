"""A scout: a second process that reads a log file ahead of the reading and sorts its lines.

Sorting a chunk's lines for the bulk path (``bulk.sort_lines``: which are Decode and
Prefill lines, each Decode line's prefix, and whether any line needs the per-line parser)
and reading its Decode rows with the learned layout's regex are about a third of reading a
log in bulk, and they need the text alone. So where a second core is free
(``children.forkable``), a child forked when the local files are opened reads the same
files with the same chunking and does that for each chunk while this process does the
rest; what it found comes through a pipe: a flag per line, the prefixes and each row
group's column joined by newlines, whether the Prefill lines are valid, (in a zone of
one offset) the Decode lines' times, and (where asked: backfill) where each line starts. The
reading then holds a chunk's lines unsplit (``sources.lines.Lines``).

A chunk's answer is used only if it fits that chunk (its first line number, line count,
size, and first and last lines), and rows only if read with this process's own regex: a
file that changes between the two reads, or a child that fails or dies, costs the work
here, never a different result. ``ACCEPTMON_SCOUT=0`` turns the scout off.
"""

from __future__ import annotations

import os
import pickle
import signal
import stat
from array import array
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from datetime import UTC, timezone, tzinfo
from functools import partial
from itertools import accumulate
from operator import add
from typing import NoReturn, cast

from acceptmon.children import PIPES, fork_writing
from acceptmon.ingest.bulk import Sorted, presort, sort_lines
from acceptmon.log_time import LocalTime
from acceptmon.model import Chunk, DecodeSample, PrefillSample
from acceptmon.parse.line import LineParser
from acceptmon.parse.prefix import PrefixCache
from acceptmon.parse.sglang import DECODE, PREFILL
from acceptmon.sources.chunks import read_chunks
from acceptmon.sources.rotation import READ_ERRORS, open_local

#: Files smaller than this are sorted here: the fork, the pipe and the second read cost more.
MIN_BYTES = 8 << 20
#: The pipe's room (Linux lets a process raise it this far): the scout can run a few chunks ahead.
_PIPE_BYTES = 1 << 20
#: ``ACCEPTMON_SCOUT=0`` sorts every chunk here (to compare, or on a machine shared too tightly).
_SWITCH = "ACCEPTMON_SCOUT"

#: Marker lines the scout parses at most to learn the layouts, as the reading process learns
#: them from the first lines it parses (a log without Prefill lines never teaches one).
_LEARN_LINES = 256

#: The Decode flags of a chunk's lines, the Prefill flags of the others, and the prefixes joined.
Flags = tuple[bytes, bytes, str]
#: The regex the Decode rows were read with, and each group's column joined.
Rows = tuple[str, tuple[str, ...]]
#: The Decode lines' times as epoch seconds (``array('d')`` bytes), and the zone offset they
#: were read in: sent where the file's zone has one offset (a time is then its prefix's alone).
Epochs = tuple[timezone, bytes]
#: What the scout finds in a chunk: (flags, rows, (Prefill regex, whether the Prefill lines
#: are valid), the Decode lines' times, where each line starts in the chunk's text (``array('q')``
#: bytes, where the reading asked: ``start(placed=True)``)), or None when the chunk is no one
#: bulk stretch.
Found = tuple[Flags, Rows | None, tuple[str, bool] | None, Epochs | None, bytes | None] | None
#: What the scout sends per chunk: its file (its place in the scout's paths), its first line
#: number, line count, size, first and last lines, and what it found.
Message = tuple[int, int, int, int, str, str, Found]


class Presorted:
    """One chunk as the scout sorted it."""

    __slots__ = ("_message", "used")

    def __init__(self, message: Message) -> None:
        self._message = message
        #: Whether the chunk fed was this one (its answer was used instead of sorting here).
        self.used = False

    def sort(self, chunk: Chunk, block: str) -> Sorted | None:
        """``sort_lines(chunk.lines, block)``: the scout's answer where it fits the chunk."""
        _file, lineno, n, size, first, last, found = self._message
        lines = chunk.lines
        if not (
            chunk.lineno == lineno
            and len(lines) == n
            and len(block) == size
            and n
            and lines[0] == first
            and lines[-1] == last
        ):
            return sort_lines(lines, block)
        self.used = True
        return None if found is None else Sorted.of(lines, *found)


class Scout:
    """The child sorting the chunks of a command's local files, in order, and this process's
    end of its pipe. Each file's answers come tagged with its place in ``paths``."""

    def __init__(self, pid: int, reader: int, paths: list[str]) -> None:
        """``paths``: the files the scout reads, in order."""
        self._pid: int | None = pid
        self._reader: int | None = reader
        self._source = os.fdopen(reader, "rb")
        self._paths = paths
        self._file = -1
        #: Whether the file being read is the scout's ``paths[_file]`` (else it was not given it).
        self._given = False
        self._ahead: Message | None = None

    def file(self, path: str) -> None:
        """The next file read is ``path``: the scout's answers for it come next (those left
        of files before it are passed over); none if the scout was not given it."""
        at = self._file + 1
        while at < len(self._paths) and self._paths[at] != path:
            at += 1
        self._given = at < len(self._paths)
        if self._given:
            self._file = at

    def next(self) -> Presorted | None:
        """The scout's answer for the next chunk of the file, or None when it has none (it
        had fewer chunks of the file, was not given it, ended or failed)."""
        while self._reader is not None and self._given:
            message = self._ahead or self._load()
            self._ahead = None
            if message is None or message[0] > self._file:
                self._ahead = message
                return None
            if message[0] == self._file:
                return Presorted(message)
        return None

    def _load(self) -> Message | None:
        try:
            message: Message = pickle.load(self._source)  # our own child's bytes
        except Exception:  # its end, or a child that died mid-message
            self.close()
            return None
        return message

    def close(self) -> None:
        """Stop the child (done or not, nothing more is wanted of it) and reap it."""
        reader, self._reader = self._reader, None
        if reader is not None:
            PIPES.discard(reader)
            self._source.close()
        pid, self._pid = self._pid, None
        if pid is not None:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)


def _regular(files: list[tuple[str, tzinfo]]) -> tuple[list[tuple[str, tzinfo]], int]:
    """The files that are regular files, and their size together. Only those can be read
    twice: a FIFO or a device gives each byte to one reader (the reading reports the rest)."""
    found, size = [], 0
    for path, zone in files:
        with suppress(OSError):
            st = os.stat(path)
            if stat.S_ISREG(st.st_mode):
                found.append((path, zone))
                size += st.st_size
    return found, size


def start(files: list[tuple[str, tzinfo]], placed: bool = False) -> Scout | None:
    """A scout reading the local files (each path with the zone its naive times are in;
    compressed or not; regular files only) in order, or None where one is not worth it
    (small files, ``ACCEPTMON_SCOUT=0``) or cannot be forked safely. ``placed``: it also sends
    where each line starts, for a reading that reads lines anywhere in a chunk (backfill)."""
    if os.environ.get(_SWITCH) == "0":
        return None
    files, size = _regular(files)
    if not files or size < MIN_BYTES:
        return None
    child = fork_writing(partial(_scan, files, placed))
    return None if child is None else Scout(*child, [path for path, _ in files])


@contextmanager
def scouting(files: list[tuple[str, tzinfo]], placed: bool = False) -> Iterator[Scout | None]:
    """``start``, the scout stopped at the end of the block (however it ends)."""
    scout = start(files, placed)
    try:
        yield scout
    finally:
        if scout is not None:
            scout.close()


def _scan(files: list[tuple[str, tzinfo]], placed: bool, writer: int) -> NoReturn:
    """In the child: each chunk of each file, read as ``ingest.read`` reads it, sorted and
    sent; then exit (a failure is an exit status of 1, and the parent sorts the rest). A
    file that cannot be read is passed over: the reading process reports it."""
    code = 1
    try:
        try:
            import fcntl

            fcntl.fcntl(writer, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
        except (ImportError, AttributeError, OSError):
            pass  # the default room: the scout is then less far ahead
        learner = _Learner(placed)
        with os.fdopen(writer, "wb") as sink:
            for file, (path, zone) in enumerate(files):
                times = _Times(zone)
                with suppress(*READ_ERRORS), open_local(path) as stream:
                    for chunk, _overlong in read_chunks("", stream, path):
                        message = (file, *learner.message(chunk, times))
                        sink.write(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))
                        sink.flush()
        code = 0
    finally:
        os._exit(code)


class _Learner:
    """The scout's own parser: it learns the layouts from the first batch lines the general
    parser accepts, as the reading process does, and reads rows with them. Where it learned
    other ones, the reading process does not take its rows (their regexes differ)."""

    def __init__(self, placed: bool = False) -> None:
        """``placed``: send where each line starts too (``start``)."""
        self._parser = LineParser("", lambda: None, UTC, None)
        self._tries = _LEARN_LINES
        self._placed = placed

    def message(self, chunk: Chunk, times: _Times) -> tuple[int, int, int, str, str, Found]:
        lines = chunk.lines
        block, found = presort(chunk)
        first, last = (lines[0], lines[-1]) if lines else ("", "")
        if found is None:
            return chunk.lineno, len(lines), len(block), first, last, None
        self._learn(chunk)
        prefixes = cast(list[str], found.prefixes)  # as ``sort_lines`` gives them: a list
        flags = bytes(found.decode), bytes(found.prefill_marks), "\n".join(prefixes)
        rows = self._rows(found)
        epochs = times.epochs(prefixes) if rows is not None else None
        return (
            chunk.lineno,
            len(lines),
            len(block),
            first,
            last,
            (flags, rows, self._prefill(found), epochs, _starts(lines) if self._placed else None),
        )

    def _learn(self, chunk: Chunk) -> None:
        parser = self._parser
        for i, text in enumerate(chunk.lines):
            if self._tries <= 0 or parser.learned(True, True):
                return
            if DECODE in text or PREFILL in text:
                self._tries -= 1
                record = parser.parse(text, chunk.lineno + i)
                if isinstance(record, DecodeSample | PrefillSample):
                    parser.learn(text, record)

    def _rows(self, found: Sorted) -> Rows | None:
        pattern = self._parser.bulk_patterns()[0]
        if pattern is None or not found.decoded:
            return None
        got = self._parser.bulk_decode("\n".join(found.decoded), len(found.decoded))
        if got is None or not isinstance(got[0][0], tuple):  # one group: findall gives no tuples
            return None
        return pattern, tuple("\n".join(column) for column in zip(*got[0], strict=True))

    def _prefill(self, found: Sorted) -> tuple[str, bool] | None:
        pattern = self._parser.bulk_patterns()[1]
        if pattern is None or not found.prefill:
            return None
        return pattern, self._parser.bulk_prefill("\n".join(found.prefill), len(found.prefill))


def _starts(lines: Sequence[str]) -> bytes:
    """Where each line starts in the lines joined by newlines, as ``array('q')`` bytes."""
    return array("q", map(add, accumulate(map(len, lines), initial=0), range(len(lines)))).tobytes()


class _Times:
    """The Decode lines' times of one file, read as the reading process reads them
    (``PrefixCache.epochs``), where the file's zone has one offset: a time is then its
    prefix's alone. In a zone with offset changes, a time depends on the times before it
    (the fold rule), so the reading process reads them itself."""

    def __init__(self, zone: tzinfo) -> None:
        self._prefixes = PrefixCache(LocalTime(zone))

    def epochs(self, prefixes: list[str]) -> Epochs | None:
        fixed = self._prefixes.fixed
        if fixed is None or not prefixes:
            return None
        epochs = self._prefixes.epochs(prefixes)
        if None in epochs:  # a prefix with no time: the reading process reads them all
            return None
        return fixed, array("d", cast(list[float], epochs)).tobytes()
