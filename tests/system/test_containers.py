"""Issue 21's must-show: the seed incident where SGLang runs, in containers.

A kubelet tree (``/var/log/pods``) and a Docker tree (``/var/lib/docker/containers``)
hold the incident's three runs of one workload: a good draft; a container restart
(``1.log``; Docker: the same file) with another draft whose ~18 KB ``server_args``
line the runtime split into pieces; a rollout (a new pod; Docker: a re-created
container of the same name) back to the good draft. Every command reads them as
one series; a live agent finds the drop when the restart's ``1.log`` appears and
counts exactly across kubelet's rotation.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from acceptmon.testing import nodes
from acceptmon.testing.container import cri_lines
from tests.support.agentproc import AgentProcess
from tests.support.wait import wait_for

pytestmark = pytest.mark.system
DROP = "acceptance_drop_after_change"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "acceptmon", *args], capture_output=True, text=True, timeout=120, check=False
    )


@pytest.fixture(scope="module", params=["kubernetes", "docker"])
def tree(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """(SOURCE, its workload's series) for each runtime's tree."""
    root = tmp_path_factory.mktemp(request.param)
    if request.param == "kubernetes":
        nodes.kubelet_tree(str(root))
        return f"kubernetes:{root}", nodes.SERIES
    nodes.docker_tree(str(root))
    return f"docker:{root}", nodes.CONTAINER


def test_runs_prints_one_table_with_three_runs_and_the_verdict_better(tree: tuple[str, str]) -> None:
    source, series = tree
    done = cli("runs", "--format", "json", source)
    assert done.returncode == 0, done.stderr
    (doc,) = json.loads(done.stdout)["sources"]  # one workload: one table
    assert doc["source"] == series
    assert len(doc["runs"]) == 3
    assert "args.speculative_draft_model_path" in doc["runs"][1]["changed_keys"]
    assert doc["verdict"]["state"] == "better"
    table = cli("runs", source)
    assert table.returncode == 0
    assert table.stdout.count("\nr1 ") == 1 and "BETTER" in table.stdout


def test_oneshot_findings_hold_the_critical_drop_naming_the_draft(tree: tuple[str, str]) -> None:
    source, series = tree
    done = cli("oneshot", "--format", "findings", source)
    findings = [json.loads(line) for line in done.stdout.splitlines()]
    drops = [f for f in findings if f["rule"] == DROP and f["severity"] == "critical"]
    assert len(drops) == 1, done.stdout
    assert drops[0]["source"] == series
    assert "speculative_draft_model_path" in drops[0]["summary"]
    metrics = cli("oneshot", source).stdout
    errors = [line for line in metrics.splitlines() if line.startswith("acceptmon_parse_errors_total{")]
    assert errors and all(line.endswith(" 0.0") for line in errors), errors


def _series_metric(agent: AgentProcess, name: str) -> float | None:
    return agent.metric(name, source=f"pods:{nodes.SERIES}")


def test_a_live_agent_finds_the_drop_when_the_restart_appears(tmp_path: Path) -> None:
    root, state = tmp_path / "pods", tmp_path / "state"
    models = tmp_path / "node-models"
    for draft in (nodes.GOOD_DRAFT, nodes.BAD_DRAFT):
        d = models / os.path.basename(draft)
        d.mkdir(parents=True)
        (d / "config.json").write_text(json.dumps({"model_type": "llama", "name": os.path.basename(draft)}))
    runs = nodes.incident_runs()
    pod = root / f"{nodes.NAMESPACE}_{nodes.POD_A}_{nodes.UID_A}" / nodes.CONTAINER
    pod.mkdir(parents=True)
    first = cri_lines(nodes.run_lines(runs[0], 1), nodes.T0)
    (pod / "0.log").write_text("".join(f"{x}\n" for x in first))
    config = tmp_path / "acceptmon.yaml"
    config.write_text(
        f"sources:\n  - path: kubernetes:{root}\n    name: pods\n    path_map: {{/models: {models}}}\n"
    )
    agent = AgentProcess(state, ["--config", str(config)], env={"NODE_NAME": "gpu-node-7"})
    try:
        wait_for(lambda: _series_metric(agent, "acceptmon_decode_batches_total") == 150, 30, "run 1 read")
        assert agent.api("/api/findings") == []
        second = cri_lines(nodes.run_lines(runs[1], 2, long_args=True), nodes.T0)
        (pod / "1.log").write_text("".join(f"{x}\n" for x in second))

        def drop() -> dict[str, Any] | None:
            found = [f for f in agent.api("/api/findings") or [] if f["rule"] == DROP]
            return found[0] if found else None

        wait_for(drop, 30, "the drop after the restart")
        finding = drop()
        assert finding is not None and finding["severity"] == "critical"
        assert "speculative_draft_model_path" in finding["summary"]
        assert finding["host"] == "gpu-node-7"
        assert finding["labels"] == {
            "container": nodes.CONTAINER,
            "namespace": nodes.NAMESPACE,
            "node": "gpu-node-7",
            "pod": nodes.POD_A,
        }
        rows = agent.api("/api/runs")
        assert [r["run_id"] for r in rows if r["source"] == f"pods:{nodes.SERIES}"] == ["r1", "r2"]
        assert agent.metric("acceptmon_draft_config_missing", source=f"pods:{nodes.SERIES}") == 0
        info = {"source": f"pods:{nodes.SERIES}", "pod": nodes.POD_A, "node": "gpu-node-7"}
        assert agent.metric("acceptmon_workload_info", **info) == 1
        # kubelet rotates 1.log while the server writes: every line counted once.
        more = cri_lines([nodes.synth.decode_line(nodes.T0, 1.5) for _ in range(40)], nodes.T0)
        with (pod / "1.log").open("a") as f:
            f.writelines(f"{x}\n" for x in more[:25])
        os.rename(pod / "1.log", pod / "1.log.20261130-123000")
        (pod / "1.log").write_text("".join(f"{x}\n" for x in more[25:]))
        wait_for(lambda: _series_metric(agent, "acceptmon_decode_batches_total") == 340, 30, "rotation read")
        assert _series_metric(agent, "acceptmon_parse_errors_total") in (None, 0)
    finally:
        agent.stop()


def test_report_backfill_and_read_log_take_the_container_forms(tree: tuple[str, str], tmp_path: Path) -> None:
    source, series = tree
    page = tmp_path / "report.html"
    done = cli("report", "-o", str(page), source)
    assert done.returncode == 0, done.stderr
    assert series in page.read_text()
    done = cli("backfill", "--out", str(tmp_path / "blocks"), source)
    assert done.returncode == 0, done.stderr
    assert any((tmp_path / "blocks").iterdir())
    code = f"import acceptmon; print(sorted(set(acceptmon.read_log({source!r})['source'])))"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120
    )
    assert done.stdout.strip() == repr([series]), done.stderr
