"""Work done in a forked child beside this process, where a second core is free.

The report spends a third of its time drawing: its plots are independent, so the
largest is drawn by a child while this process draws the rest (a 1M-line log's
report: ~0.5 s less). The child returns its result pickled through a pipe; where
forking is unsafe (other threads running) or useless (one core), or the child
fails, the work is done here, with the same result.
"""

from __future__ import annotations

import os
import pickle
import threading
from collections.abc import Callable
from typing import TypeVar

_T = TypeVar("_T")


def beside(work: Callable[[], _T]) -> Callable[[], _T]:
    """Start ``work`` in a forked child now; the returned call waits for its result."""
    if (os.cpu_count() or 1) < 2 or threading.active_count() > 1 or not hasattr(os, "fork"):
        return work
    r, w = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(r)
        os.close(w)
        return work
    if pid == 0:  # the child: nothing of it may outlive this block (no traceback, no atexit)
        code = 1
        try:
            os.close(r)
            data = pickle.dumps(work())
            with os.fdopen(w, "wb") as out:
                out.write(data)
            code = 0
        finally:
            os._exit(code)
    os.close(w)

    def result() -> _T:
        with os.fdopen(r, "rb") as f:
            data = f.read()
        _, status = os.waitpid(pid, 0)
        if os.waitstatus_to_exitcode(status) != 0 or not data:
            return work()  # the child failed: do it here
        got: _T = pickle.loads(data)  # our own child's bytes
        return got

    return result
