"""``acceptmon oneshot`` on other engines' logs: the drop after a llama.cpp restart, the engine label."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from acceptmon.cli import main
from acceptmon.metrics.collect import STORE_CATALOGUE

DATA = Path(__file__).resolve().parents[3] / "data"


def _oneshot(fmt: str, path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["oneshot", "--format", fmt, "--name", "llama", "--timezone", "UTC", str(path)]) == 0
    return capsys.readouterr().out


def test_a_drop_after_a_llamacpp_restart_with_another_draft_is_found(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = _oneshot("findings", DATA / "llamacpp" / "restart-drop.log", capsys)
    findings = [json.loads(line) for line in out.splitlines()]
    drops = [f for f in findings if f["rule"] == "acceptance_drop_after_change"]
    assert len(drops) == 1, findings
    drop = drops[0]
    assert (
        drop["engine"] == "llamacpp"
        and drop["active"]
        and (drop["baseline_run_id"], drop["run_id"]) == ("r1", "r2")
    )
    assert drop["changed_keys"] == ["args.model_draft"]
    assert drop["draft_model"] == "/models/Qwen3-0.6B-Q2_K.gguf"
    assert drop["before_accept_len"] > 3.4 and drop["after_accept_len"] < 2.6


def test_every_series_carries_the_engine(capsys: pytest.CaptureFixture[str]) -> None:
    text = _oneshot("prom", DATA / "llamacpp" / "restart-drop.log", capsys)
    store = tuple(m.name for m in STORE_CATALOGUE)  # the agent's own families carry no engine, live too
    series = [line for line in text.splitlines() if line.startswith(store)]
    assert series and all('engine="llamacpp"' in line for line in series)
    accepted = next(s for s in series if s.startswith("acceptmon_spec_accepted_tokens_total"))
    drafted = next(s for s in series if s.startswith("acceptmon_spec_draft_tokens_total"))
    assert (float(accepted.rsplit(" ", 1)[1]), float(drafted.rsplit(" ", 1)[1])) == (21931.0, 43732.0)
