"""Forked children: when forking is safe, and the pipe ends a new child must close.

Two kinds of work run in a child forked beside the command: a report's drawing
(``apps/report/beside.py``) and the scout that sorts a log file's lines ahead of
the reading (``ingest/scout.py``). Each pipe end a process holds for another child
is registered here, so that a child forked later closes it: else that other child's
reader would not see the end of its input until the later child exits too.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import NoReturn

#: How far a process beside the reading yields to it (``os.nice``, on a scale up to 19): the
#: report's drawer while it imports, backfill's promtool while the logs are read.
BESIDE_NICE = 10

#: Pipe ends this process holds for another one (a child at work, or its own parent).
PIPES: set[int] = set()


def forkable() -> bool:
    """Whether a child may be forked now: a second core, and no other thread (a thread
    holding a lock at the fork would leave it held in the child forever)."""
    return (os.cpu_count() or 1) >= 2 and threading.active_count() == 1 and hasattr(os, "fork")


def fork(keep: int) -> int | None:
    """``os.fork``, the child closing every pipe end held for another but ``keep``; None
    where forking is unsafe or fails."""
    if not forkable():
        return None
    try:
        pid = os.fork()
    except OSError:
        return None
    if pid == 0:
        try:
            for fd in PIPES - {keep}:
                os.close(fd)
        except BaseException:  # the child must never go on as its parent would
            os._exit(1)
        PIPES.clear()
    return pid


def fork_writing(child: Callable[[int], NoReturn]) -> tuple[int, int] | None:
    """A child forked now with a new pipe to write to: ``child(writer)`` runs in it (and exits
    it); (its pid, this process's end to read), or None where forking is unsafe or fails."""
    reader, writer = os.pipe()
    PIPES.add(reader)
    pid = fork(writer)
    if pid == 0:
        child(writer)
    os.close(writer)
    if pid is None:
        PIPES.discard(reader)
        os.close(reader)
        return None
    return pid, reader
