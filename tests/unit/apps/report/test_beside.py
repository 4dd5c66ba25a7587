"""Work beside this process: done in a forked child where that is safe, with the same result,
and done here where it is not (other threads) or where the child fails."""

from __future__ import annotations

import os
import threading

from acceptmon.apps.report.beside import beside


def test_the_work_runs_in_a_child_where_a_second_core_is_free_and_its_result_comes_back() -> None:
    me = os.getpid()
    result = beside(lambda: (os.getpid(), {"light": b"\x89PNG" * 1000}))()
    assert (result[0] != me) == ((os.cpu_count() or 1) >= 2)
    assert result[1] == {"light": b"\x89PNG" * 1000}


def test_with_other_threads_running_it_is_done_here() -> None:
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        assert beside(os.getpid)() == os.getpid()
    finally:
        stop.set()
        t.join()


def test_a_failing_child_is_replaced_by_doing_the_work_here() -> None:
    parent = os.getpid()

    def work() -> str:
        if os.getpid() != parent:
            raise RuntimeError("the child fails")
        return "drawn here"

    assert beside(work)() == "drawn here"
