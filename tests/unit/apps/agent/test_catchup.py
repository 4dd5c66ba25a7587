"""CatchUp alone: an ask is answered only by a pass that began after it, and never waits past its deadline."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

from acceptmon.apps.agent.catchup import CatchUp
from tests.support.wait import wait_for
from tests.support.waker import CountingWaker


@dataclass
class Answer:
    fresh: bool | None = None  # None while the ask waits
    waited: float = 0.0


Asker = Callable[[CatchUp], Answer]


@pytest.fixture
def asker() -> Iterator[Asker]:
    """Ask from another thread (an HTTP worker); the outcome lands in the returned Answer."""
    threads: list[threading.Thread] = []

    def start(catchup: CatchUp) -> Answer:
        out = Answer()

        def ask() -> None:
            began = time.monotonic()
            fresh = catchup.ask()
            out.waited = time.monotonic() - began
            out.fresh = fresh

        t = threading.Thread(target=ask)
        t.start()
        threads.append(t)
        return out

    yield start
    for t in threads:
        t.join(10)


def test_a_pass_that_began_before_the_ask_does_not_answer_it(
    asker: Asker,
) -> None:
    waker = CountingWaker()
    catchup = CatchUp(waker, deadline=30)
    assert catchup.begin() is None and not catchup.pending()  # nobody asked: a plain poll
    first = asker(catchup)
    wait_for(catchup.pending, 10, "the first ask")
    ticket = catchup.begin()
    assert ticket == 1 and waker.woken == 1
    second = asker(catchup)  # arrives while that pass runs
    wait_for(lambda: waker.woken == 2, 10, "the second ask")
    catchup.answered(ticket)
    wait_for(lambda: first.fresh is not None, 10, "the first ask to be answered")
    assert first.fresh is True
    assert second.fresh is None and catchup.pending()  # it waits for the next pass
    catchup.answered(catchup.begin() or 0)
    wait_for(lambda: second.fresh is not None, 10, "the second ask to be answered")
    assert second.fresh is True and not catchup.pending()


def test_an_ask_nobody_answers_returns_at_its_deadline(
    asker: Asker,
) -> None:
    catchup = CatchUp(CountingWaker(), deadline=0.2)
    out = asker(catchup)
    wait_for(lambda: out.fresh is not None, 10, "the ask to give up")
    assert out.fresh is False
    assert 0.2 <= out.waited < 1.0
