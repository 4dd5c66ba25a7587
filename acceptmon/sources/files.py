"""The SOURCE grammar every reading command takes: a SOURCE becomes one or more logs, each with its rotations.

A path is one log (read as given when it exists, glob characters and all). A
glob names files; those that are rotations of another match
(``server.log.1``, ``server.log-20261201.gz``) join that log, read oldest first
(by rotation number or date, modification time only between the two; the
current file last), compressed ones decompressed.
``kubernetes:[ROOT]`` and ``docker:[ROOT]`` name a node's container logs, one
log per workload (``sources/container/tree.py``). ``-`` is standard input;
``ssh://[user@]host[:port]/path-or-glob`` is the same
over SFTP (``ssh/files.py``; ``ingest.read.opened`` takes both kinds).
"""

from __future__ import annotations

import glob
import logging
import os
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass

from acceptmon.sources.container.tree import discover, is_container, root_of
from acceptmon.sources.lines import Readable
from acceptmon.sources.rotation import group_rotations, readable
from acceptmon.text.printable import printable

log = logging.getLogger("acceptmon.runs")

#: Standard input, as a SOURCE and as the one file of its log.
STDIN = "-"

#: Opens one file of a log for reading, decompressed (local, or over SFTP).
Opener = Callable[[str], AbstractContextManager[Readable]]


class InputError(Exception):
    """A SOURCE names nothing readable."""


@dataclass(frozen=True, slots=True)
class Log:
    """One log: its name (the source label), its files oldest first, and how to open them."""

    name: str
    files: tuple[str, ...]
    opener: Opener | None = None
    #: ``ssh://`` URL of the current file, exact (the name is ``printable``), to follow it.
    url: str = ""
    #: The container SOURCE (``kubernetes:…``, ``docker:…``) the log is a workload of, to follow it.
    tree: str = ""

    def __post_init__(self) -> None:
        # The name is the source label and what the table shows; the files keep their exact paths.
        object.__setattr__(self, "name", printable(self.name))


def expand(source: str) -> list[Log]:
    """The logs a local SOURCE names; raises InputError when it names none."""
    if source == STDIN:
        return [Log(STDIN, (STDIN,))]
    if is_container(source) and not os.path.exists(source):
        workloads = discover(source)
        if not workloads:
            raise InputError(f"{printable(root_of(source))}: no container logs found")
        return [
            Log(series, tuple(f for i in insts for f in i.files), tree=source)
            for series, insts in workloads.items()
        ]
    if os.path.exists(source) or not glob.has_magic(source):
        if not os.path.exists(source):
            raise InputError(f"{printable(source)}: no such file")
        if os.path.isdir(source):
            raise InputError(f"{printable(source)}: is a directory (a glob such as DIR/*.log names its logs)")
        if not os.access(source, os.R_OK):
            raise InputError(f"{printable(source)}: permission denied")
        return [Log(source, (source,))]
    matches = sorted(p for p in glob.glob(source) if os.path.isfile(p) and _readable(p))
    if not matches:
        raise InputError(f"{printable(source)}: matches no file")
    return [Log(base, files) for base, files in group_rotations(matches, _mtime)]


def _readable(path: str) -> bool:
    if readable(path):
        return True
    log.warning("%s: cannot decompress this format; skipped", path)
    return False


def _mtime(path: str) -> float:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return 0.0
