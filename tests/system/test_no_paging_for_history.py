"""First start on old logs: history is recorded, not paged; what is still wrong is.

Two logs written days ago. ``history.log`` had a drop that a revert resolved and
then went silent while busy (a days-old stall). ``active.log`` ends in a drop
that is still active. The fake Slack server must receive exactly one message —
the active drop, naming the host, model, draft model and the user's labels —
while /api/findings still lists the history.
"""

from __future__ import annotations

import signal
import socket
from datetime import datetime, timedelta
from pathlib import Path

from acceptmon.testing import synth
from tests.support.agentproc import AgentProcess
from tests.support.slack_server import FakeSlack
from tests.support.wait import wait_for

DAYS_AGO = datetime.now().replace(microsecond=0) - timedelta(days=3)


def _run(start: datetime, seed: int, level: float, steps: int) -> list[str]:
    lines = synth.startup(start, seed, speculative_num_steps=steps)
    return lines + [
        synth.decode_line(start + timedelta(seconds=50 + i), level + (i % 5) * 0.02, 8 + i % 4)
        for i in range(90)
    ]


def _write(path: Path, runs: list[list[str]]) -> None:
    lines: list[str] = []
    for i, run in enumerate(runs):
        lines += run
        if i < len(runs) - 1:
            lines += synth.shutdown(DAYS_AGO + timedelta(hours=6 * i + 5))
    path.write_text("".join(line + "\n" for line in lines))


def test_first_start_on_old_logs_pages_only_what_is_still_wrong(tmp_path: Path) -> None:
    history, active = tmp_path / "history.log", tmp_path / "active.log"
    hours = [DAYS_AGO + timedelta(hours=6 * i) for i in range(3)]
    _write(history, [_run(hours[0], 1, 2.41, 3), _run(hours[1], 2, 1.57, 5), _run(hours[2], 3, 2.41, 3)])
    _write(active, [_run(hours[0], 4, 2.41, 3), _run(hours[1], 5, 1.57, 5)])
    config = tmp_path / "c.yaml"
    config.write_text(
        f"sources:\n  - path: '{history}'\n    name: history\n"
        f"  - path: '{active}'\n    name: active\n    labels: {{cluster: eu-1, team: inference}}\n"
        "detect:\n  stall_s: 2\n"  # the stall clock starts with the agent (issue 25): 2 s of it
        "notify:\n  slack:\n    webhook_url_env: ACCEPTMON_TEST_HOOK\n    allow_insecure_localhost: true\n"
    )
    with FakeSlack() as slack:
        agent = AgentProcess(
            tmp_path / "state", ["--config", str(config)], env={"ACCEPTMON_TEST_HOOK": slack.url}
        )
        try:

            def rules() -> set[tuple[str, str, bool]]:
                return {(f["source"], f["rule"], f["active"]) for f in agent.api("/api/findings") or []}

            # Everything is recorded: the resolved drop, both days-old stalls, the active drop.
            want = {
                ("history", "acceptance_drop_after_change", False),
                ("history", "log_stalled", True),
                ("active", "log_stalled", True),
                ("active", "acceptance_drop_after_change", True),
            }
            wait_for(lambda: want <= rules(), 30, f"findings not all recorded: {rules()}\n{agent.stderr()}")
            assert slack.wait_until(lambda: slack.count() >= 1, 20), agent.stderr()
            wait_for(
                lambda: (
                    (agent.metric("acceptmon_notifications_total", notifier="slack", outcome="sent") or 0)
                    >= 1
                    and agent.metric("acceptmon_notify_queue_depth", notifier="slack") == 0
                ),
                10,
                "delivery not counted",
            )
            keys = slack.delivered_keys()
            assert len(slack.requests) == 1 and len(keys) == 1, keys
            assert keys[0].startswith("acceptance_drop_after_change:active:"), keys
            body = slack.requests[0].body or {}
            text = str(body)
            host = socket.gethostname()
            assert body["text"].startswith(f"[CRITICAL] acceptance drop after change on {host} (active): ")
            for needle in (
                synth.BASE_ARGS["model_path"],
                synth.BASE_ARGS["speculative_draft_model_path"],
                "eu-1",
            ):
                assert needle in text, needle
            api = {(f["source"], f["rule"]): f for f in agent.api("/api/findings") or []}
            drop = api[("active", "acceptance_drop_after_change")]
            assert drop["host"] == host and drop["labels"] == {"cluster": "eu-1", "team": "inference"}
            assert "history, not sent" in agent.stderr()
            active_drop = {"source": "active", "rule": "acceptance_drop_after_change", "host": host}
            assert agent.metric("acceptmon_finding_active", **active_drop) == 1
            assert agent.metric("acceptmon_run_info", source="history", host=host) == 1
        finally:
            agent.stop(signal.SIGKILL)
