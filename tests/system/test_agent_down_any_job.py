"""A real Prometheus finds a stopped agent under a job name that is not "acceptmon".

The Prometheus Operator names the job after the ServiceMonitor; the rules must still
tell an agent that stopped answering (AcceptmonAgentDown) from a target that is
simply not an agent, and must not call it absent while it is still discovered.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from acceptmon.testing import synth
from tests.support.procs import Proc, run_prometheus, start_process
from tests.support.tools import free_port
from tests.support.wait import wait_for
from tests.system.test_deploy import RULES, START, api, decode_lines

JOB = "acceptmon/acceptmon"  # a PodMonitor's job: <namespace>/<name>


@pytest.fixture
def agent(tmp_path: Path) -> Iterator[Proc]:
    log = tmp_path / "server.log"
    log.write_text("\n".join(synth.startup(START, seed=1) + decode_lines(0, 3)) + "\n")
    port = free_port()
    args = [sys.executable, "-m", "acceptmon", "run", "--listen", f"127.0.0.1:{port}"]
    args += ["--state-dir", str(tmp_path / "state"), str(log)]
    yield from start_process(args, tmp_path / "agent.out", f"http://127.0.0.1:{port}", "/healthz")


@pytest.fixture
def prometheus(tmp_path: Path, agent: Proc) -> Iterator[Proc]:
    """The shipped rules; the agent and a port nobody serves, both under the Operator-style job."""
    nobody = f"127.0.0.1:{free_port()}"
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(RULES)],
        "scrape_configs": [
            {
                "job_name": JOB,
                "scrape_timeout": "1s",
                "static_configs": [{"targets": [agent.url.removeprefix("http://"), nobody]}],
            }
        ],
    }
    yield from run_prometheus(tmp_path, config)


def instances(prom: Proc, expr: str) -> set[str]:
    return {r["metric"]["instance"] for r in api(prom, "query", query=expr)["result"]}


def alerts(prom: Proc, name: str) -> set[tuple[str, str]]:
    return {
        (a["labels"].get("instance", ""), a["state"])
        for a in api(prom, "alerts")["alerts"]
        if a["labels"]["alertname"] == name
    }


def test_a_stopped_agent_is_down_under_any_job_name(agent: Proc, prometheus: Proc) -> None:
    target = agent.url.removeprefix("http://")

    def marked() -> set[str]:
        return instances(prometheus, f'acceptmon:agent_target:info{{job="{JOB}"}}')

    wait_for(lambda: marked() == {target}, 30, "the agent marked as one", interval=0.2)
    assert agent.stop() == 0, agent.output()
    wait_for(
        lambda: alerts(prometheus, "AcceptmonAgentDown") == {(target, "pending")},
        30,
        "AcceptmonAgentDown pending for the stopped agent only",
        interval=0.2,
    )
    assert instances(prometheus, "up == 0") >= {target}  # the port nobody serves is down too
    assert marked() == {target}, "the mark must outlive the agent's own series"
    assert alerts(prometheus, "AcceptmonAgentAbsent") == set()
