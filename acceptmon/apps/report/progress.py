"""A progress bar while the report reads: on stderr, and only when stderr is a terminal.

A month of logs takes a while to read, mostly in one file: a bar that moved per
file would sit at 0% until the end. So each file's reads count their bytes as
its chunks go by (clamped to the file's size: a compressed file yields more
than it weighs, and finishing it fills its share). Piped or redirected, nothing
is drawn and the logs are read as they are.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace

from acceptmon.sources.files import Log, Opener
from acceptmon.sources.lines import Readable
from acceptmon.sources.rotation import open_local

#: Told (path, bytes) as a file's bytes are read.
Advance = Callable[[str, int], None]


class _Counting:
    """A stream that tells ``advance`` how many bytes each read returned."""

    def __init__(self, stream: Readable, advance: Callable[[int], None]) -> None:
        self._stream, self._advance = stream, advance

    def read(self, size: int = -1, /) -> bytes:
        data = self._stream.read(size)
        self._advance(len(data))
        return data


def _counted_opener(open_: Opener, advance: Advance) -> Opener:
    @contextmanager
    def opener(path: str) -> Iterator[Readable]:
        with open_(path) as stream:
            yield _Counting(stream, lambda n: advance(path, n))

    return opener


def counted(logs: list[Log], advance: Advance) -> list[Log]:
    """The same logs, each of whose files tells ``advance`` the bytes read from it."""
    return [replace(lg, opener=_counted_opener(lg.opener or open_local, advance)) for lg in logs]


def sizes(logs: list[Log]) -> dict[str, int | None]:
    """Each file's size on this host; None for a remote or vanished one (its weight is unknown)."""
    out: dict[str, int | None] = {}
    for lg in logs:
        for path in lg.files:
            try:
                out[path] = None if lg.opener is not None else os.stat(path).st_size
            except OSError:
                out[path] = None
    return out


class Tally:
    """Bytes shown per file, never past its size; ``finish`` fills a file's share."""

    def __init__(self, weights: dict[str, int | None], show: Callable[[int], None]) -> None:
        self._left = {p: w for p, w in weights.items() if w is not None}
        self._show = show

    def advance(self, path: str, n: int) -> None:
        left = self._left.get(path)
        step = n if left is None else min(n, left)
        if left is not None:
            self._left[path] = left - step
        if step:
            self._show(step)

    def finish(self, path: str) -> None:
        self.advance(path, self._left.get(path) or 0)


@contextmanager
def reading(logs: list[Log], label: str) -> Iterator[tuple[list[Log], Callable[[str], None]]]:
    """The logs to read and the callback for each file read to its end; a transient bar on
    stderr meanwhile when it is a terminal (its total unknown when a file's size is)."""
    if not sys.stderr.isatty():
        yield logs, lambda _path: None
        return
    with _bar(label, sizes(logs)) as tally:
        yield counted(logs, tally.advance), tally.finish


@contextmanager
def _bar(label: str, weights: dict[str, int | None]) -> Iterator[Tally]:
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

    known = None if None in weights.values() else sum(w or 0 for w in weights.values())
    with Progress(
        TextColumn(label),
        BarColumn(),
        DownloadColumn(),
        TimeRemainingColumn(),
        console=Console(file=sys.stderr),
        transient=True,
    ) as progress:
        task = progress.add_task("read", total=known)
        yield Tally(weights, lambda n: progress.advance(task, n))
