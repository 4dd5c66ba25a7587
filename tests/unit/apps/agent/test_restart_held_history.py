"""A restart does not page what the first run held back as history.

The first start reads a log silent for three days since a busy Decode line: its ``log_stalled``
finding is recorded but held (silent since long before the agent started). On main, a restart
took every finding open in the checkpoint for one already announced, and paged the stall.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from acceptmon.apps.agent.agent import Agent
from acceptmon.apps.agent.history import HistoryFilter
from acceptmon.clock import ManualClock
from acceptmon.detect.findings import STALLED
from acceptmon.model import Finding, Run
from acceptmon.settings import Settings, from_mapping
from acceptmon.testing import synth


@dataclass
class FakeWorker:
    """Stands in for the notify worker: records what the agent hands it."""

    sent: list[Finding] = field(default_factory=list)

    def notify(self, f: Finding) -> None:
        self.sent.append(f)

    def note_run(self, run: Run) -> None:
        pass

    def stop(self) -> None:
        pass


def _settings(tmp_path: Path) -> Settings:
    return from_mapping(
        {
            "state_dir": str(tmp_path / "state"),
            "read_draft_config": False,
            "sources": [{"path": str(tmp_path / "server.log"), "name": "gpu", "read_from_beginning": True}],
        }
    )


def _start(settings: Settings) -> tuple[Agent, FakeWorker]:
    agent = Agent(settings, clock=ManualClock(time.time()))
    agent.open()
    worker = agent.announce.worker = FakeWorker()
    agent.step()
    while agent.loop.backlog:
        agent.step()
    agent.evaluate()  # wall clock: the log has been silent for three days; the stall clock starts
    later = datetime.now(UTC) + timedelta(seconds=agent.detector.config.stall_s + 1)
    agent.detector.evaluate(later)  # the agent has watched it silent for stall_s: a stall
    agent.evaluate()
    return agent, worker


def test_a_stall_held_as_history_is_not_paged_after_a_restart(tmp_path: Path) -> None:
    start = datetime.now().replace(microsecond=0) - timedelta(days=3)
    lines = synth.startup(start, 1)
    lines += [synth.decode_line(start + timedelta(seconds=30 + 10 * i), 2.4, 8) for i in range(40)]
    (tmp_path / "server.log").write_text("".join(line + "\n" for line in lines))
    settings = _settings(tmp_path)

    first, worker = _start(settings)
    stalls = [f for f in first.announce.findings if f.rule == STALLED and f.active]
    assert stalls, first.announce.findings  # recorded ...
    assert worker.sent == []  # ... and held back as history
    first.close()

    second, worker = _start(settings)
    assert [f for f in second.announce.findings if f.rule == STALLED and f.active]  # still open
    assert worker.sent == [], [f.key for f in worker.sent]
    second.close()


def test_a_finding_paged_before_the_restart_still_is_open_after_it() -> None:
    """Its RESOLVED must follow its firing: the checkpoint's ``paged`` says it was sent."""
    now = datetime.now(UTC)
    drop = Finding(
        "acceptance_drop_after_change", "critical", "s", "r2", "r1", "x", now, "drop:s", active=True
    )
    stall = Finding(STALLED, "warning", "s", "r2", None, "x", now, f"{STALLED}:s", active=True)
    first = HistoryFilter(now.timestamp())
    first.caught_up([drop, stall], lambda _s: now - timedelta(days=3))
    assert first.pageable(drop) and not first.pageable(stall)
    paged = first.paged([drop, stall])

    again = HistoryFilter(now.timestamp() + 60)
    again.open_at_start([drop, stall], paged)
    closed = replace(drop, active=False)
    again.caught_up([closed, stall], lambda _s: now - timedelta(days=3))
    assert again.pageable(closed) and not again.pageable(stall)
