"""The dashboard's fleet and cost panels against a real agent and a real Prometheus (issue 24 §4):
acceptance per draft position by run, hosts by config with an outlier, and the GPU time a drop cost."""

from __future__ import annotations

import json
import sys
import urllib.request
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from acceptmon.testing import changes, synth
from tests.support.procs import Proc, start_process
from tests.support.sshd import free_port
from tests.support.wait import wait_for
from tests.system.test_deploy import _prometheus, api, dashboard_queries

START = datetime.now().replace(microsecond=0) - timedelta(minutes=40)
HOSTS = [f"gpu-{i}" for i in range(1, 6)]
#: gpu-5 runs the same config as its peers but accepts far less: the outlier.
LEVEL = {"gpu-5": 1.9}
POSITIONS = [0.8, 0.6, 0.4]
DROPPED = [0.5, 0.3, 0.1]
NEW_DRAFT = {"num_speculative_tokens": 3, "model": "/models/draft-v2"}


def decode(at: datetime, n: int, level: float) -> list[str]:
    return [synth.decode_line(at + timedelta(seconds=2 * i), level) for i in range(n)]


def write(path: Path, lines: list[str]) -> None:
    with path.open("a") as log:
        log.write("\n".join(lines) + "\n")


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[Proc]:
    """Five SGLang hosts on one config (gpu-5 low), gpu-1 restarted onto a config that dropped, and
    one vLLM source with per-position acceptance whose draft changed."""
    sources = []
    for host in HOSTS:
        log = tmp_path / f"{host}.log"
        lines = synth.startup(START, seed=1) + decode(START + timedelta(minutes=1), 40, LEVEL.get(host, 2.5))
        if host == "gpu-1":  # a config change that cost acceptance
            lines += synth.startup(START + timedelta(minutes=5), seed=2, attention_backend="flashinfer")
            lines += decode(START + timedelta(minutes=6), 40, 1.6)
        write(log, lines)
        sources.append({"name": host, "path": str(log), "host": host})
    vllm = tmp_path / "vllm.log"
    vlines = [changes.non_default_args_line(START, speculative_config={"num_speculative_tokens": 3})]
    vlines += [changes.spec_line(START + timedelta(seconds=10 * (i + 1)), POSITIONS) for i in range(10)]
    write(vllm, vlines)
    sources.append({"name": "vllm", "path": str(vllm), "host": "gpu-6"})
    config = tmp_path / "acceptmon.yaml"
    config.write_text(yaml.safe_dump({"sources": sources, "state_dir": str(tmp_path / "state")}))
    port = free_port()
    args = [
        sys.executable,
        "-m",
        "acceptmon",
        "run",
        "--listen",
        f"127.0.0.1:{port}",
        "--config",
        str(config),
    ]
    yield from start_process(args, tmp_path / "agent.out", f"http://127.0.0.1:{port}", "/healthz")


@pytest.fixture
def prometheus(tmp_path: Path, fleet: Proc) -> Iterator[Proc]:
    (tmp_path / "prom").mkdir()
    yield from _prometheus(tmp_path / "prom", fleet.url.removeprefix("http://"))


def findings(agent: Proc) -> list[dict[str, Any]]:
    with urllib.request.urlopen(agent.url + "/api/findings", timeout=5) as resp:
        body: list[dict[str, Any]] = json.load(resp)
    return body


def panel(prom: Proc, title: str) -> list[dict[str, Any]]:
    """Every series the panel's queries return now."""
    queries = [q for t, q in dashboard_queries().items() if t.rsplit(" #", 1)[0] == title]
    assert queries, title
    return [r for q in queries for r in api(prom, "query", query=q)["result"]]


def test_the_fleet_panels_show_positions_outliers_and_gpu_time_lost(
    tmp_path: Path, fleet: Proc, prometheus: Proc
) -> None:
    def dropped() -> bool:
        return any(f["rule"] == "acceptance_drop_after_change" for f in findings(fleet))

    wait_for(dropped, 60, "gpu-1's drop after its config change", interval=0.2)
    positions = "Acceptance per draft position by run"
    wait_for(
        lambda: len(panel(prometheus, positions)) == 3, 60, "the first vLLM run in Prometheus", interval=0.2
    )
    later = START + timedelta(minutes=10)
    # More traffic on every host, twice, so every counter has a rate (and the drop costs tokens).
    for step in range(2):
        for host in HOSTS:
            level = 1.6 if host == "gpu-1" else LEVEL.get(host, 2.5)
            write(tmp_path / f"{host}.log", decode(later + timedelta(minutes=step), 20, level))
        at = later + timedelta(minutes=step)
        # The vLLM server restarts onto another draft, which fails from its first position on.
        restart = [changes.non_default_args_line(at, speculative_config=NEW_DRAFT)] if step == 0 else []
        write(
            tmp_path / "vllm.log",
            restart + [changes.spec_line(at + timedelta(seconds=10 * (i + 1)), DROPPED) for i in range(5)],
        )
        wait_for(
            lambda: bool(panel(prometheus, "Tokens lost to drops in range")), 60, "the counter", interval=0.2
        )

    def ratios() -> dict[str, float]:
        rows = panel(prometheus, "Hosts vs their peers (15m)")
        return {r["metric"]["source"]: float(r["value"][1]) for r in rows}

    # gpu-1 (another config now) and the vLLM source are alone in theirs: 1 against themselves.
    wait_for(lambda: len(ratios()) == 6, 60, "every host against its peers", interval=0.2)
    assert {s for s, r in ratios().items() if r < 0.9} == {"gpu-5"}, ratios()

    def lost() -> float:
        rows = panel(prometheus, "GPU time lost to drops in range")
        return float(rows[0]["value"][1]) if rows else 0.0

    wait_for(lambda: lost() > 0, 60, "GPU time lost", interval=0.2)
    (drop,) = [f for f in findings(fleet) if f["rule"] == "acceptance_drop_after_change"]
    assert drop["cost"]["throughput_lost"] == pytest.approx(1 - 1.6 / 2.5, abs=0.01)
    assert drop["cost"]["tokens_lost_since_first_seen"] > 0
    # The run before the change and the run after it, side by side, per position.
    wait_for(lambda: len(panel(prometheus, positions)) == 6, 60, "both vLLM runs' positions", interval=0.2)
    bars = {
        (r["metric"]["run_id"], r["metric"]["position"]): float(r["value"][1])
        for r in panel(prometheus, "Acceptance per draft position by run")
    }
    assert bars == {
        **{("r1", str(i)): pytest.approx(p) for i, p in enumerate(POSITIONS)},
        **{("r2", str(i)): pytest.approx(p) for i, p in enumerate(DROPPED)},
    }
