"""Bytes chunks → complete lines, keeping the partial tail; or lines split only when read (pure)."""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from typing import Protocol, overload


class Readable(Protocol):
    """What lines are read from: a file, a decompressing reader, an SFTP file, a pipe."""

    def read(self, size: int = -1, /) -> bytes: ...


#: A line longer than this is dropped and counted, so one runaway writer
#: cannot make the agent's memory grow without bound.
MAX_LINE_BYTES = 4 * 1024 * 1024


#: Lines this near either end of a ``Lines`` are found by walking from that end, not split.
_NEAR = 16


class Deferred(Sequence[str]):
    """Lines made all at once (split, picked) only when read as a whole or far from what is
    known without that (``_one``); their number is known before. A slice is a view until read.
    Equal to any sequence of the same lines, as the tuple they stand for."""

    __slots__ = ("_got", "_n")

    def __init__(self, n: int) -> None:
        self._n = n
        self._got: list[str] | None = None

    def _make(self) -> list[str]:
        """Every line, made (once)."""
        raise NotImplementedError

    def _one(self, i: int) -> str | None:
        """Line ``i`` (0 ≤ i < n) where it is read without making them all, else None."""
        return None

    def split(self) -> list[str]:
        """Every line (made once)."""
        got = self._got
        if got is None:
            got = self._got = self._make()
        return got

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, i: int) -> str: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[str]: ...

    def __getitem__(self, i: int | slice) -> str | Sequence[str]:
        made = self._got
        if made is not None:  # made already: a list's own lookup (jsonl reads every line so)
            return made[i]
        n = self._n
        if isinstance(i, slice):
            start, stop, step = i.indices(n)
            if step == 1:
                return self if (start, stop) == (0, n) else View(self, start, max(start, stop))
        elif -n <= i < n:
            got = self._one(i % n)
            if got is not None:
                return got
        return self.split()[i]

    def __iter__(self) -> Iterator[str]:
        return iter(self.split())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and tuple(self) == tuple(other)

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._n} lines)"


class Lines(Deferred):
    """A chunk's lines as its decoded text, split only when a line far from either end is
    read: where a scout has sorted a chunk (``ingest/scout.py``), the reading mostly counts
    its lines and reads a few near either end, and splitting a megabyte into thousands of
    strings is then most of what reading it costs."""

    __slots__ = ("_starts", "text")

    def __init__(self, text: str, n: int) -> None:
        """``text``: the lines joined by newlines; ``n``: how many (its newlines + 1)."""
        super().__init__(n)
        self.text = text
        self._starts: array[int] | None = None

    def place(self, starts: array[int]) -> None:
        """Where each line starts in ``text`` (as a scout found them, for a reader of lines
        anywhere in the chunk: backfill): then any one line is cut out, none split."""
        if len(starts) == self._n:
            self._starts = starts

    @property
    def placed(self) -> bool:
        """Whether any one line is read without a split (``place``)."""
        return self._starts is not None

    def _make(self) -> list[str]:
        return self.text.split("\n")

    def _one(self, i: int) -> str | None:
        text, n, starts = self.text, self._n, self._starts
        if starts is not None:
            return text[starts[i] : starts[i + 1] - 1 if i + 1 < n else len(text)]
        if i < _NEAR:  # walked to from the start
            start = 0
            for _ in range(i):
                start = text.index("\n", start) + 1
            end = text.find("\n", start)
            return text[start:] if end < 0 else text[start:end]
        if n - i <= _NEAR:  # walked back to from the end
            end = len(text)
            for _ in range(n - 1 - i):
                end = text.rindex("\n", 0, end)
            return text[text.rfind("\n", 0, end) + 1 : end]
        return None


class View(Deferred):
    """Lines ``[start, stop)`` of ``Deferred`` lines, read from them only when read."""

    __slots__ = ("_base", "_start")

    def __init__(self, base: Deferred, start: int, stop: int) -> None:
        super().__init__(stop - start)
        self._base, self._start = base, start

    def _make(self) -> list[str]:
        return self._base.split()[self._start : self._start + self._n]

    def _one(self, i: int) -> str:
        return self._base[self._start + i]


class LineSplitter:
    """Split a byte stream into complete lines.

    ``feed`` returns the decoded complete lines and how many bytes, counted
    from the end of the previous complete line, are now fully handled (so the
    caller's offset always sits on a line boundary). A partial last line is
    held until its newline arrives. Invalid UTF-8 is replaced, never fatal;
    a trailing ``\\r`` is stripped. A line longer than ``max_line`` bytes is
    dropped whole and counted in ``overlong`` (complete lines are measured in
    characters, held partial lines in bytes); memory stays bounded. After ``feed``,
    ``text`` is its lines joined by newlines when that is the decoded text itself
    (nothing stripped or dropped; else None): a ``Chunk.text`` no one need join again.
    """

    __slots__ = ("_pending", "_skipping", "_tail", "lazy", "max_line", "overlong", "text")

    def __init__(self, max_line: int = MAX_LINE_BYTES, lazy: bool = False) -> None:
        """``lazy``: complete lines come as ``Lines`` (split when read) where the decoded
        text is exactly the lines joined (no carriage return, nothing overlong or skipped)."""
        self._tail = b""
        self._pending = 0
        self._skipping = False
        self.max_line = max_line
        self.overlong = 0
        self.text: str | None = None
        self.lazy = lazy

    @property
    def pending(self) -> int:
        """Bytes after the last complete line (held or being skipped)."""
        return self._pending

    def reset(self) -> None:
        self._tail = b""
        self._pending = 0
        self._skipping = False

    def feed(self, data: bytes) -> tuple[Sequence[str], int]:
        """Return (complete lines, bytes consumed up to the last newline)."""
        cut = data.rfind(b"\n")
        self.text = None
        if cut < 0:
            self._pending += len(data)
            self._hold(self._tail + data if not self._skipping else data)
            return [], 0
        consumed = self._pending + cut + 1
        buf = data[:cut] if self._skipping else self._tail + data[:cut]
        skip_first = self._skipping
        self._skipping = False
        rest = data[cut + 1 :]
        self._tail, self._pending = b"", len(rest)
        self._hold(rest)
        # "\n" never occurs inside a UTF-8 sequence, so decoding first and
        # splitting after gives the same lines as splitting bytes first.
        text = buf.decode("utf-8", "replace")
        if self.lazy and not skip_first and len(text) <= self.max_line and "\r" not in text:
            self.text = text  # no line can be overlong: the whole text is not
            return Lines(text, text.count("\n") + 1), consumed
        out = text.split("\n")
        if skip_first:
            del out[0]
        if "\r" in text:
            out = [s.rstrip("\r") for s in out]
        elif not skip_first:
            self.text = text
        if len(text) > self.max_line and max(map(len, out), default=0) > self.max_line:
            keep = [s for s in out if len(s) <= self.max_line]
            self.overlong += len(out) - len(keep)
            out = keep
            self.text = None
        return out, consumed

    def _hold(self, buf: bytes) -> None:
        if self._skipping:
            return
        if len(buf) > self.max_line:
            self.overlong += 1
            self._skipping = True
            buf = b""
        self._tail = buf


READ_SIZE = 1 << 20
