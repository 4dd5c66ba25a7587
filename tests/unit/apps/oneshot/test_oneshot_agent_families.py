"""``oneshot`` (prom) prints what the agent serves: the same families, findings included.

On main it printed the store's 24 families and never ``acceptmon_finding_active``, although
it is documented as printing what the agent would serve for the same lines."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from acceptmon.apps import oneshot
from acceptmon.apps.agent.agent import Agent
from acceptmon.apps.agent.api import metrics_text
from acceptmon.apps.agent.web.server import ConnectionStats
from acceptmon.clock import ManualClock
from acceptmon.settings import from_mapping

DEMO = (
    Path(__file__).resolve().parents[4] / "acceptmon" / "apps" / "demo" / "data" / "demo-eagle3-incident.log"
)
FINDING = "acceptmon_finding_active"
#: The demo log's last line (the agent's clock reads it: no stall at the end of the log).
END = datetime(2026, 11, 30, 13, 3, tzinfo=UTC).timestamp()


def _families(text: str) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """Each family's samples; ``host`` is the agent's machine, which oneshot does not print."""
    return {
        f.name: {
            tuple(sorted((k, v) for k, v in s.labels.items() if k != "host")): s.value
            for s in f.samples
            if s.name.removesuffix("_total") == f.name
        }
        for f in text_string_to_metric_families(text)
    }


def _agent_text(tmp_path: Path) -> str:
    log = tmp_path / "live.log"
    log.write_bytes(DEMO.read_bytes())
    cfg = from_mapping(
        {
            "state_dir": str(tmp_path / "state"),
            "read_draft_config": False,
            "sources": [{"path": str(log), "name": "demo", "read_from_beginning": True, "timezone": "UTC"}],
        }
    )
    agent = Agent(cfg, clock=ManualClock(END))
    try:
        agent.open()
        agent.step()
        while agent.loop.backlog:
            agent.step()
        agent.evaluate()
        return metrics_text(agent, ConnectionStats())
    finally:
        agent.close()


def _oneshot_text(capsys: pytest.CaptureFixture[str]) -> str:
    status = oneshot.main([str(DEMO)], fmt="prom", tz=UTC, names=["demo"])
    assert status == 0
    return capsys.readouterr().out


def test_oneshot_prints_the_agents_families_and_findings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    served, printed = _families(_agent_text(tmp_path)), _families(_oneshot_text(capsys))
    assert set(printed) == set(served)
    assert not printed["acceptmon_build_info"]  # the output depends on the log alone
    # A stall is the live agent's (the log is days old by the host's clock): not the log's end.
    live = {k: v for k, v in served[FINDING].items() if ("rule", "log_stalled") not in k}
    assert printed[FINDING] == live
    assert printed["acceptmon_findings"] == {
        k: v for k, v in served["acceptmon_findings"].items() if ("rule", "log_stalled") not in k
    }
    assert printed["acceptmon_findings"]  # the demo's drop was raised
    for name in ("acceptmon_finding_accept_length", "acceptmon_spec_accept_length", "acceptmon_lines"):
        assert printed[name] == served[name], name
