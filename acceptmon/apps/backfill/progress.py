"""Backfill's progress on stderr, when it is a terminal: the files read, then promtool's parts.

promtool makes blocks while the logs are read (``blocks.Blocks``), so the last file read is
not the end: a second bar counts the parts turned into blocks of those handed over, and
shows what is left once reading is done. Piped or redirected, nothing is drawn.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass


def _nothing(*_args: object) -> None:
    pass


@dataclass(frozen=True)
class Shown:
    #: Told each path read to its end.
    read: Callable[[str], None] = _nothing
    #: Told (parts turned into blocks, parts handed to promtool) as they change.
    blocks: Callable[[int, int], None] = _nothing


@contextmanager
def progress(files: list[str]) -> Iterator[Shown]:
    """Bars over the bytes of ``files`` read and the parts made into blocks, while inside."""
    if not sys.stderr.isatty():
        yield Shown()
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    sizes = {p: _size(p) for p in files}
    with Progress(
        TextColumn("backfill: {task.description}"),
        BarColumn(),
        TextColumn("{task.percentage:>3.0f}%"),
        TimeRemainingColumn(),
        console=Console(file=sys.stderr),
        transient=True,
    ) as bar:
        read = bar.add_task("read", total=sum(sizes.values()) or len(files))
        blocks = bar.add_task("blocks", total=None, visible=False)
        yield Shown(
            lambda path: bar.advance(read, sizes.get(path) or 1),
            lambda done, added: bar.update(blocks, completed=done, total=added, visible=True),
        )


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0
