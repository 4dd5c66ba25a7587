"""What ``acceptmon runs SOURCE…`` reads: a SOURCE becomes one or more logs, each with its rotations.

A path is one log. A glob names files; those that are rotations of another
match (``server.log.1``, ``server.log-20261201.gz``) join that log, read oldest
first (by modification time, the current file last), compressed ones
included. ``-`` is standard input.
"""

from __future__ import annotations

import bz2
import glob
import gzip
import logging
import lzma
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import IO

from acceptmon.sources.rotation import COMPRESSED_SUFFIXES, is_rotated_name
from acceptmon.text.printable import printable

log = logging.getLogger("acceptmon.runs")

#: Compressed rotations this command can read (stdlib codecs); others are skipped with a warning.
_OPENERS: dict[str, Callable[[str, str], IO[bytes]]] = {
    ".gz": gzip.open,  # type: ignore[dict-item]
    ".bz2": bz2.open,  # type: ignore[dict-item]
    ".xz": lzma.open,  # type: ignore[dict-item]
    ".lzma": lzma.open,  # type: ignore[dict-item]
}


#: Opens one file of a log for reading (local, or over SFTP).
Opener = Callable[[str], AbstractContextManager[IO[bytes]]]


@dataclass(frozen=True, slots=True)
class Log:
    """One log: its name (the source label), its files oldest first, and how to open them."""

    name: str
    files: tuple[str, ...]
    opener: Opener | None = None
    #: ``ssh://`` URL of the current file, exact (the name is ``printable``), to follow it.
    url: str = ""

    def __post_init__(self) -> None:
        # The name is the source label and what the table shows; the files keep their exact paths.
        object.__setattr__(self, "name", printable(self.name))


class InputError(Exception):
    """A SOURCE names nothing readable."""


def expand(source: str) -> list[Log]:
    """The logs a SOURCE names; raises InputError when it names none."""
    if source == "-":
        return [Log("-", ("-",))]
    if not glob.has_magic(source):
        if not os.path.exists(source):
            raise InputError(f"{printable(source)}: no such file")
        return [Log(source, (source,))]
    matches = sorted(p for p in glob.glob(source) if os.path.isfile(p) and _readable(p))
    if not matches:
        raise InputError(f"{printable(source)}: matches no file")
    return _group(matches)


def _readable(path: str) -> bool:
    if plain_name(path) == path or os.path.splitext(path)[1].lower() in _OPENERS:
        return True
    log.warning("%s: cannot decompress this format; skipped", path)
    return False


def plain_name(name: str) -> str:
    """The name without a compression suffix."""
    lower = name.lower()
    for suffix in COMPRESSED_SUFFIXES:
        if lower.endswith(suffix):
            return name[: -len(suffix)]
    return name


def rotation_groups(paths: list[str], age: Callable[[str], float]) -> list[tuple[str, tuple[str, ...]]]:
    """Each log among ``paths`` with its rotations: (log, its files oldest first, the log last).

    A log is a path that is neither compressed nor a rotation of another path;
    a rotation joins the log it was rotated from (by name, ``age`` ordering them);
    a path that is neither is a log of its own. Local and remote globs share this.
    """

    def rotated_from(base: str, path: str) -> bool:
        return path != base and is_rotated_name(os.path.basename(base), os.path.basename(plain_name(path)))

    bases = [p for p in paths if plain_name(p) == p and not any(rotated_from(q, p) for q in paths)]
    members: dict[str, list[str]] = {b: [] for b in bases}
    for p in paths:
        if p in members:
            continue
        owner = next((b for b in bases if rotated_from(b, p)), None)
        if owner is None:
            members[p] = []
        else:
            members[owner].append(p)
    return [
        (base, (*sorted(rotated, key=lambda p: (age(p), p)), base))
        for base, rotated in sorted(members.items())
    ]


def _group(paths: list[str]) -> list[Log]:
    return [Log(base, files) for base, files in rotation_groups(paths, _mtime)]


def _mtime(path: str) -> float:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return 0.0


@contextmanager
def open_log_file(path: str) -> Iterator[IO[bytes]]:
    """A file's bytes, decompressed when it is compressed; ``-`` is standard input."""
    if path == "-":
        yield sys.stdin.buffer
        return
    opener = _OPENERS.get(os.path.splitext(path)[1].lower())
    if opener is not None:
        with opener(path, "rb") as f:
            yield f
        return
    with open(path, "rb") as f:
        yield f
