"""Work done in a forked child beside this process, where a second core is free.

A report's plots need matplotlib, whose import (~0.5 s with numpy) and drawing would
follow the reading of the logs. So a child is forked before the logs are read
(``forked``): it readies itself (``warm``: the imports) while this process reads, then
waits for its work, which comes pickled through a pipe with its data (a 1M-line log's
series: ~0.1 s to pass). There the largest plot is drawn by a child of its own
(``beside``: forked when the work is known, so the data is in both) while the rest are
drawn. Each returns its result pickled. Where forking is unsafe (other threads running)
or useless (one core), or a child fails, the work is done here, with the same result.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import NoReturn, TypeVar

from acceptmon.children import BESIDE_NICE, fork_writing
from acceptmon.children import PIPES as _PIPES
from acceptmon.children import fork as _fork

_T = TypeVar("_T")


def _finish(work: Callable[[], object], result_w: int) -> NoReturn:
    """In a child: ``work``'s result pickled to ``result_w``, then exit. Nothing of the child
    may outlive this (no traceback, no atexit); a failure is an exit status of 1."""
    code = 1
    try:
        _PIPES.add(result_w)  # a child of this child must not hold it
        data = pickle.dumps(work(), protocol=pickle.HIGHEST_PROTOCOL)
        with os.fdopen(result_w, "wb") as out:
            out.write(data)
        code = 0
    finally:
        os._exit(code)


def _waiter(pid: int, result_r: int, work: Callable[[], _T]) -> Callable[[], _T]:
    """The call that waits for the child's result (``work`` done here if the child failed)."""

    def result() -> _T:
        _PIPES.discard(result_r)
        with os.fdopen(result_r, "rb") as source:
            data = source.read()
        _, status = os.waitpid(pid, 0)
        if os.waitstatus_to_exitcode(status) != 0 or not data:
            return work()  # the child failed: do it here
        got: _T = pickle.loads(data)  # our own child's bytes
        return got

    return result


def beside(work: Callable[[], _T]) -> Callable[[], _T]:
    """Start ``work`` in a child forked now; the returned call waits for its result."""
    child = fork_writing(partial(_finish, work))
    return work if child is None else _waiter(*child, work)


class Beside:
    """One child, forked at construction, that readies itself (``warm``) and then does the
    one piece of work it is given later (``run``)."""

    def __init__(self, warm: Callable[[], object]) -> None:
        self._pid: int | None = None
        self._work_w = self._result_r = -1
        work_r, work_w = os.pipe()
        result_r, result_w = os.pipe()
        _PIPES.update((work_w, result_r))
        pid = _fork(-1)
        if pid == 0:
            code = 1
            try:
                # Its imports run while the logs are read, where the reading and its scout
                # (``ingest/scout.py``) come first: niced, it takes a core they leave idle
                # (~0.2 s off a 1M-line report here); the drawing after waits on nothing else.
                os.nice(BESIDE_NICE)
                warm()
                with os.fdopen(work_r, "rb") as source:
                    given = source.read()
                if given:  # else this process had no work for it
                    _finish(pickle.loads(given), result_w)  # our own parent's bytes
                code = 0
            finally:
                os._exit(code)
        os.close(work_r)
        os.close(result_w)
        if pid is None:
            self._close_pipes(work_w, result_r)
            return
        self._pid, self._work_w, self._result_r = pid, work_w, result_r

    @staticmethod
    def _close_pipes(*fds: int) -> None:
        _PIPES.difference_update(fds)
        for fd in fds:
            os.close(fd)

    def run(self, work: Callable[[], _T]) -> Callable[[], _T]:
        """Hand ``work`` (picklable: a module-level function or a ``partial`` of one) to the
        child; the returned call waits for its result (``work`` done here if need be)."""
        pid, self._pid = self._pid, None
        if pid is None:
            return work
        _PIPES.discard(self._work_w)
        try:
            with os.fdopen(self._work_w, "wb") as out:
                out.write(pickle.dumps(work, protocol=pickle.HIGHEST_PROTOCOL))
        except OSError:  # the child is gone: its pipe is closed
            pass
        return _waiter(pid, self._result_r, work)

    def close(self) -> None:
        """Without work given, let the child go (it exits at the end of its pipe)."""
        pid, self._pid = self._pid, None
        if pid is not None:
            self._close_pipes(self._work_w, self._result_r)
            os.waitpid(pid, 0)


@contextmanager
def forked(warm: Callable[[], object]) -> Iterator[Beside]:
    """A child forked now, readying itself with ``warm``; gone at the end of the block."""
    child = Beside(warm)
    try:
        yield child
    finally:
        child.close()
