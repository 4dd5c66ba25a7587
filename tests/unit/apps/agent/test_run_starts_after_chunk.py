"""Run starts are handled after the chunk, under a plain lock: no callback mid-chunk, no re-entry.

On main a run start called back from the run tracker into ``Agent.evaluate`` in the middle of
a chunk, which rendered and queued notifications under a re-entrant lock. Now the tracker
returns the start, the detector and run table take it in line order, and the agent announces
the ending run's verdict, notes the run and saves its snapshot once the chunk is in.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from acceptmon.apps.agent.agent import Agent
from acceptmon.clock import ManualClock
from acceptmon.model import Finding, Run
from acceptmon.settings import from_mapping
from acceptmon.testing import synth

T0 = datetime(2026, 11, 30, 9, 0, 0)


def _run(start: datetime, level: float, seed: int) -> list[str]:
    body = synth.traffic(random.Random(seed), start + timedelta(seconds=50), 400, level)
    return [*synth.startup(start, seed=seed), *body, *synth.shutdown(start + timedelta(hours=1))]


@dataclass
class Worker:
    """Stands in for the notify worker; notes whether the agent lock was free at each run start."""

    agent: Agent
    runs: list[tuple[str, bool]] = field(default_factory=list)

    def _free(self) -> bool:
        """Whether another thread (a scrape) could take the agent lock now."""
        got: list[bool] = []

        def attempt() -> None:
            got.append(self.agent.lock.acquire(blocking=False))
            if got[0]:
                self.agent.lock.release()

        other = threading.Thread(target=attempt)
        other.start()
        other.join()
        return got[0]

    def notify(self, f: Finding) -> None:
        pass

    def note_run(self, run: Run) -> None:
        self.runs.append((run.run_id, self._free()))

    def stop(self) -> None:
        pass


@pytest.fixture
def agent(tmp_path: Path) -> Iterator[Agent]:
    log = tmp_path / "server.log"
    lines = [
        *_run(T0, 2.41, 1),
        *_run(T0 + timedelta(hours=2), 1.57, 2),
        *_run(T0 + timedelta(hours=4), 2.41, 3),
    ]
    log.write_text("".join(line + "\n" for line in lines))
    cfg = from_mapping(
        {
            "state_dir": str(tmp_path / "state"),
            "read_draft_config": False,
            "sources": [{"path": str(log), "name": "gpu", "read_from_beginning": True}],
        }
    )
    a = Agent(cfg, clock=ManualClock(time.time()))
    a.open()
    yield a
    a.close()


def test_the_agent_lock_is_plain(agent: Agent) -> None:
    assert type(agent.lock) is type(threading.Lock())


def test_run_starts_are_handled_after_the_chunk_with_the_lock_free(agent: Agent) -> None:
    worker = Worker(agent)
    agent.announce.worker = worker
    agent.step(budget=1_000, seconds=600)  # the whole backlog (one chunk: under 1 MiB)
    assert not agent.loop.backlog
    assert worker.runs == [("r1", True), ("r2", True), ("r3", True)]
    assert [r["run_id"] for r in agent.snapshots.load("gpu")] == ["r1", "r2", "r3"]


def test_a_drop_resolved_later_in_the_same_backlog_is_still_announced(agent: Agent) -> None:
    """The detector judges the ending run in line (before r3 starts); the agent announces that
    verdict after the chunk, although r3 resolved it by then."""
    agent.step(budget=1_000, seconds=600)
    drops = {key: n for key, n in agent.announce.raised.items() if key[0] == "acceptance_drop_after_change"}
    assert drops == {("acceptance_drop_after_change", "gpu", "critical"): 1}
    final = [f for f in agent.evaluate(wall_clock=False) if f.rule == "acceptance_drop_after_change"]
    assert final and not final[0].active
