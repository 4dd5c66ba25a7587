"""Work beside this process: a child forked early readies itself, then does the work it is
given later, with the same result; the work is done here where forking is unsafe (other
threads) or where the child fails."""

from __future__ import annotations

import os
import threading
from functools import partial
from pathlib import Path

from acceptmon.apps.report.beside import forked


def _nothing() -> None:
    pass


def _where(payload: bytes) -> tuple[int, dict[str, bytes]]:
    return os.getpid(), {"light": payload}


def _mark(path: str) -> None:
    Path(path).write_text(str(os.getpid()))


def _pid_in(path: str) -> int:
    return int(Path(path).read_text())


def test_the_work_runs_in_a_child_where_a_second_core_is_free_and_its_result_comes_back() -> None:
    me = os.getpid()
    with forked(_nothing) as child:
        result = child.run(partial(_where, b"\x89PNG" * 100_000))()
    assert (result[0] != me) == ((os.cpu_count() or 1) >= 2)
    assert result[1] == {"light": b"\x89PNG" * 100_000}


def test_the_child_readies_itself_before_its_work_is_given(tmp_path: Path) -> None:
    """``warm`` runs in the child as soon as it is forked, while this process goes on."""
    marker = str(tmp_path / "warm")
    with forked(partial(_mark, marker)) as child:
        pid = child.run(partial(_pid_in, marker))()
    if (os.cpu_count() or 1) >= 2:
        assert pid == int(Path(marker).read_text()) != os.getpid()


def test_two_children_each_get_their_work_without_waiting_for_the_other() -> None:
    """A child forked later does not hold the first child's pipe open: if it did, the first
    would see the end of its work only when the second exits."""
    with forked(_nothing) as first, forked(_nothing) as second:
        one = first.run(partial(_where, b"1"))
        # The second is given nothing yet: the first must finish all the same.
        assert one()[1] == {"light": b"1"}
        assert second.run(partial(_where, b"2"))()[1] == {"light": b"2"}


def test_a_child_given_no_work_goes_away() -> None:
    with forked(_nothing) as child:
        pass
    assert child.run(partial(_where, b"x"))()[0] == os.getpid()  # closed: done here


def test_with_other_threads_running_it_is_done_here() -> None:
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        with forked(_nothing) as child:
            assert child.run(os.getpid)() == os.getpid()
    finally:
        stop.set()
        t.join()


def _fails_in_a_child(parent: int) -> str:
    if os.getpid() != parent:
        raise RuntimeError("the child fails")
    return "drawn here"


def test_a_failing_child_is_replaced_by_doing_the_work_here() -> None:
    with forked(_nothing) as child:
        assert child.run(partial(_fails_in_a_child, os.getpid()))() == "drawn here"


def test_a_child_that_fails_to_ready_itself_is_replaced_by_doing_the_work_here() -> None:
    def broken() -> None:
        raise ImportError("no matplotlib")

    with forked(broken) as child:
        assert child.run(os.getpid)() == os.getpid()
