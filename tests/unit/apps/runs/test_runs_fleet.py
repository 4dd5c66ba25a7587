"""``acceptmon runs`` over several logs: the fleet table holds each host against its peers."""

from __future__ import annotations

import json
import random
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from acceptmon.cli import main
from acceptmon.testing import synth

T0 = datetime(2026, 11, 30, 9, 0, 0)


def host_log(tmp: Path, name: str, level: float, running: int = 16, seed: int = 1, **args: object) -> None:
    """One host's log: a start, then 120 Decode intervals around ``level`` at a steady batch size."""
    rng = random.Random(seed)
    lines = synth.startup(T0, seed, **args)
    lines += [
        synth.decode_line(T0 + timedelta(seconds=60 + 2 * i), rng.gauss(level, 0.08), running)
        for i in range(120)
    ]
    (tmp / f"{name}.log").write_text("\n".join(lines) + "\n")


def fleet_json(tmp: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main(["runs", "--format", "json", "--timezone", "UTC", str(tmp / "gpu-*.log")]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["sources"]) == len(list(tmp.glob("gpu-*.log")))
    fleet: dict[str, Any] = doc["fleet"]
    return fleet


def statuses(fleet: dict[str, Any]) -> dict[str, str]:
    configs = fleet["configs"]
    return {Path(h["source"]).stem: h["status"] for c in configs for h in c["hosts"]}


def test_five_hosts_one_far_below_its_peers_is_the_outlier(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for i in range(1, 6):
        host_log(tmp_path, f"gpu-{i}", 1.6 if i == 3 else 2.4, seed=i)
    assert main(["runs", "--timezone", "UTC", str(tmp_path / "gpu-*.log")]) == 0
    out = capsys.readouterr().out
    table = out[out.index("fleet: each host") :]
    assert max(len(line) for line in table.splitlines()) <= 80
    assert "5 hosts, peers' median acceptance 47%" in table
    assert "outliers: gpu-3.log" in table and "  gpu-3.log" in table
    assert "outlier: acceptance under 80% of the median" in table

    fleet = fleet_json(tmp_path, capsys)
    (config,) = fleet["configs"]
    assert config["model"] == "Qwen/Qwen3-32B" and config["config_hash"]
    assert config["outliers"] == [str(tmp_path / "gpu-3.log")]
    assert statuses(fleet) == {"gpu-1": "ok", "gpu-2": "ok", "gpu-3": "outlier", "gpu-4": "ok", "gpu-5": "ok"}
    gpu3 = next(h for h in config["hosts"] if h["source"].endswith("gpu-3.log"))
    low, high = gpu3["accept_rate_ci"]
    assert low <= gpu3["accept_rate_median"] <= high < 0.8 * config["peer_median_accept_rate"]


def test_a_fleet_wide_drop_has_no_outlier(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for i in range(1, 6):
        host_log(tmp_path, f"gpu-{i}", 1.6, seed=i)
    assert set(statuses(fleet_json(tmp_path, capsys)).values()) == {"ok"}


def test_too_few_peers_judges_nobody(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for i, level in enumerate((2.4, 2.4, 1.3), start=1):
        host_log(tmp_path, f"gpu-{i}", level, seed=i)
    assert set(statuses(fleet_json(tmp_path, capsys)).values()) == {"too few peers"}


def test_a_host_at_another_load_is_not_judged(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for i in range(1, 6):
        host_log(tmp_path, f"gpu-{i}", 1.6 if i == 5 else 2.4, running=4 if i == 5 else 16, seed=i)
    assert statuses(fleet_json(tmp_path, capsys))["gpu-5"] == "other load"


def test_peers_are_hosts_of_the_same_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Four hosts on one draft, a fifth on another: two configs, none with enough peers to judge
    the fifth, and its lower acceptance is its config's, not an outlier's."""
    for i in range(1, 5):
        host_log(tmp_path, f"gpu-{i}", 2.4, seed=i)
    host_log(tmp_path, "gpu-5", 1.6, seed=5, speculative_draft_model_path="/models/other-draft")
    fleet = fleet_json(tmp_path, capsys)
    configs = fleet["configs"]
    assert len(configs) == 2
    assert statuses(fleet)["gpu-5"] == "too few peers"
    assert all(not c["outliers"] for c in configs)


def test_one_log_has_no_fleet_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    host_log(tmp_path, "gpu-1", 2.4)
    assert main(["runs", "--timezone", "UTC", str(tmp_path / "gpu-1.log")]) == 0
    assert "fleet:" not in capsys.readouterr().out
