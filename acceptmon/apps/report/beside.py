"""Work done in a forked child beside this process, where a second core is free.

A report's plots need matplotlib, whose import (~0.3 s) and drawing would follow the
reading of the logs. So a child is forked before the logs are read: it readies itself
(``warm``: the imports) while this process reads, then waits for its work, which comes
pickled through a pipe with its data (a 1M-line log's series: ~0.1 s to pass), and
returns its result pickled. Where forking is unsafe (other threads running) or useless
(one core), or the child fails, the work is done here, with the same result.
"""

from __future__ import annotations

import os
import pickle
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

_T = TypeVar("_T")

#: This process's ends of the pipes to its children still at work: a child forked later
#: closes them, or one child's end of input would wait for the other's exit.
_HELD: set[int] = set()


def forkable() -> bool:
    """Whether a child may be forked now: a second core, and no other thread (a thread
    holding a lock at the fork would leave it held in the child forever)."""
    return (os.cpu_count() or 1) >= 2 and threading.active_count() == 1 and hasattr(os, "fork")


class Beside:
    """One child, forked at construction, that does one piece of work given later (``run``)."""

    def __init__(self, warm: Callable[[], object]) -> None:
        self._pid: int | None = None
        self._work_w = self._result_r = -1
        if not forkable():
            return
        work_r, work_w = os.pipe()
        result_r, result_w = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            for fd in (work_r, work_w, result_r, result_w):
                os.close(fd)
            return
        if pid == 0:  # the child: nothing of it may outlive this block (no traceback, no atexit)
            code = 1
            try:
                for fd in (work_w, result_r, *_HELD):
                    os.close(fd)
                warm()
                with os.fdopen(work_r, "rb") as source:
                    given = source.read()
                if given:  # else this process had no work for it
                    work: Callable[[], object] = pickle.loads(given)  # our own parent's bytes
                    data = pickle.dumps(work(), protocol=pickle.HIGHEST_PROTOCOL)
                    with os.fdopen(result_w, "wb") as out:
                        out.write(data)
                code = 0
            finally:
                os._exit(code)
        os.close(work_r)
        os.close(result_w)
        self._pid, self._work_w, self._result_r = pid, work_w, result_r
        _HELD.update((work_w, result_r))

    def run(self, work: Callable[[], _T]) -> Callable[[], _T]:
        """Hand ``work`` (picklable: a module-level function or a ``partial`` of one) to the
        child; the returned call waits for its result (``work`` done here if need be)."""
        pid, self._pid = self._pid, None
        if pid is None:
            return work
        _HELD.discard(self._work_w)
        try:
            with os.fdopen(self._work_w, "wb") as out:
                out.write(pickle.dumps(work, protocol=pickle.HIGHEST_PROTOCOL))
        except OSError:  # the child is gone: its pipe is closed
            pass

        def result() -> _T:
            _HELD.discard(self._result_r)
            with os.fdopen(self._result_r, "rb") as source:
                data = source.read()
            _, status = os.waitpid(pid, 0)
            if os.waitstatus_to_exitcode(status) != 0 or not data:
                return work()  # the child failed: do it here
            got: _T = pickle.loads(data)  # our own child's bytes
            return got

        return result

    def close(self) -> None:
        """Without work given, let the child go (it exits at the end of its pipe)."""
        pid, self._pid = self._pid, None
        if pid is not None:
            _HELD.difference_update((self._work_w, self._result_r))
            os.close(self._work_w)
            os.close(self._result_r)
            os.waitpid(pid, 0)


@contextmanager
def forked(warm: Callable[[], object]) -> Iterator[Beside]:
    """A child forked now, readying itself with ``warm``; gone at the end of the block."""
    child = Beside(warm)
    try:
        yield child
    finally:
        child.close()
