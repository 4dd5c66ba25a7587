"""The detector's state survives the agent's own restart: a real ``acceptmon run``, killed.

Without it an open critical finding vanished when the agent restarted
(Alertmanager then reports a resolution nobody made), and the run before the
restart could no longer serve as a baseline, so a drop right after it went
unseen. The log is the EAGLE-3 layer-id incident of test_real_case, whose
helpers these tests share.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.system.test_real_case import (
    BAD,
    BAD_LEN,
    DROP,
    GOOD,
    GOOD_LEN,
    INTERVALS,
    KEY,
    Agent,
    ServerLog,
    poll,
    write_draft,
)

pytestmark = pytest.mark.system


@pytest.fixture
def case(tmp_path: Path) -> Iterator[tuple[Path, ServerLog, Path]]:
    draft = tmp_path / "Qwen3-32B-EAGLE3"
    draft.mkdir()
    write_draft(draft, GOOD)
    config = tmp_path / "acceptmon.yaml"
    config.write_text("read_draft_config: true\n")
    # Log time from 4 min ago to a few minutes ahead: the stall rule (a warning) stays quiet.
    log = ServerLog(
        tmp_path / "sglang.log", draft, datetime.now().replace(microsecond=0) - timedelta(minutes=4)
    )
    log.path.touch()
    yield config, log, draft


def _active(agent: Agent) -> dict[str, Any] | None:
    f = agent.drop()
    return f if f is not None and f["active"] else None


def _saved_finding(state: Path, key: str) -> bool | None:
    """Whether the checkpoint on disk already holds ``key`` as active and announced."""
    try:
        saved = json.loads((state / "checkpoint.json").read_text())
    except (OSError, ValueError):
        return None
    books = [f for s in saved.get("detector", {}).get("sources", {}).values() for f in s["book"]]
    held = any(f["key"] == key and f["active"] for f in books)
    return (held and key in saved["announced"]["keys"]) or None


def _labels(agent: Agent) -> dict[str, str]:
    return {"rule": DROP, "source": agent.source, "severity": "critical"}


def test_an_open_drop_survives_kill_9_and_its_revert_resolves_it(case: tuple[Path, ServerLog, Path]) -> None:
    config, log, draft = case
    agent = Agent(config, log)
    try:
        log.start()
        log.serve(GOOD_LEN, INTERVALS)
        log.stop()
        agent.read_all()  # the agent reads config.json at each start it sees
        write_draft(draft, BAD)
        log.start()
        log.serve(BAD_LEN, INTERVALS)
        agent.read_all()
        drop = poll(lambda: _active(agent), 15, "the drop finding", agent.out)
        assert KEY in drop["changed_keys"] and drop["baseline_run_id"] == "r1"
        poll(
            lambda: _saved_finding(config.parent / "state", drop["key"]), 10, "a checkpoint with the finding"
        )
        announced = agent.out.read_text().count(f"finding {DROP}")
        assert announced == 1
    finally:
        agent.proc.kill()
        agent.proc.wait()

    agent = Agent(config, log)
    try:
        # No polling: the agent serves HTTP only once it has restored, so the very first answers
        # must already show the finding open, or Alertmanager would see a resolution.
        assert agent.metric("acceptmon_finding_active", **_labels(agent)) == 1.0
        again = _active(agent)
        assert again is not None
        assert (again["key"], again["first_seen"]) == (drop["key"], drop["first_seen"])
        assert again == drop
        assert agent.metric("acceptmon_findings_total", **_labels(agent)) == 1.0  # not counted twice
        agent.read_all()  # nothing re-read beyond the checkpoint: counters and lines agree
        assert agent.out.read_text().count(f"finding {DROP}") == announced  # nor announced twice

        write_draft(draft, GOOD)
        log.stop()
        log.start()
        log.serve(GOOD_LEN, INTERVALS)
        agent.read_all()
        resolved = poll(lambda: _if_resolved(agent.drop()), 15, "the finding to resolve", agent.out)
        assert (resolved["key"], resolved["first_seen"]) == (drop["key"], drop["first_seen"])
        assert resolved["resolved_at"]
        assert agent.metric("acceptmon_finding_active", **_labels(agent)) == 0.0
    finally:
        agent.stop()


def _if_resolved(f: dict[str, Any] | None) -> dict[str, Any] | None:
    return f if f is not None and not f["active"] else None


def test_a_drop_right_after_an_agent_restart_is_judged_against_the_run_before(
    case: tuple[Path, ServerLog, Path],
) -> None:
    config, log, draft = case
    log.start()
    log.serve(GOOD_LEN, INTERVALS)
    log.stop()
    agent = Agent(config, log)
    try:
        agent.read_all()
    finally:
        assert agent.stop() == 0

    # While the agent is down nothing happens; the bad start comes after it is back, and only
    # the checkpoint still knows run r1's acceptance.
    agent = Agent(config, log)
    try:
        write_draft(draft, BAD)
        log.start()
        log.serve(BAD_LEN, INTERVALS)
        agent.read_all()
        drop = poll(lambda: _active(agent), 15, "the drop finding", agent.out)
        assert (drop["baseline_run_id"], drop["run_id"]) == ("r1", "r2")
        assert KEY in drop["changed_keys"]
        assert drop["before_accept_len"] == pytest.approx(GOOD_LEN, abs=0.08)
        assert drop["after_accept_len"] == pytest.approx(BAD_LEN, abs=0.08)
    finally:
        agent.stop()
