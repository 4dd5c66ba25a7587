"""Where a draft model's config.json is found: its directory, or the HF cache named by hf_home."""

from __future__ import annotations

import json
import logging
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from acceptmon.apps.agent.agent import Agent
from acceptmon.apps.agent.api import metrics_text as _metrics
from acceptmon.runs.draft_config import candidates, read_draft_config
from acceptmon.settings import from_mapping
from acceptmon.testing import synth

NOW = datetime(2026, 3, 1, 12, 0, 0)
LAYERS = {"eagle_config": {"eagle_aux_hidden_state_layer_ids": [2, 30, 58]}}


def hf_cache(root: Path, repo: str) -> Path:
    org, name = repo.split("/")
    snap = root / "hub" / f"models--{org}--{name}" / "snapshots" / "abc123"
    snap.mkdir(parents=True)
    (snap / "config.json").write_text(json.dumps(LAYERS))
    return snap / "config.json"


def test_a_repo_id_is_found_in_the_named_hub(tmp_path: Path) -> None:
    found = hf_cache(tmp_path / "hf", "lmsys/EAGLE3-x")
    assert candidates("lmsys/EAGLE3-x", str(tmp_path / "hf" / "hub"))[-1] == str(found)
    assert read_draft_config("lmsys/EAGLE3-x", hub=str(tmp_path / "hf" / "hub")) == LAYERS
    assert read_draft_config("lmsys/EAGLE3-x", hub=str(tmp_path / "elsewhere")) is None


def test_snapshots_are_listed_by_the_function_given() -> None:
    listed: list[str] = []

    def remote(directory: str) -> list[str]:
        listed.append(directory)
        return [directory + "/new/config.json"]

    out = candidates("org/name", ".cache/huggingface/hub", remote)
    assert listed == [".cache/huggingface/hub/models--org--name/snapshots"]
    assert out[-1] == ".cache/huggingface/hub/models--org--name/snapshots/new/config.json"


def _agent(tmp_path: Path, **source: object) -> Agent:
    cfg = from_mapping(
        {
            "state_dir": str(tmp_path / "state"),
            "sources": [{"path": str(tmp_path / "s.log"), "name": "gpu", **source}],
        }
    )
    return Agent(cfg)


def test_hf_home_of_a_source_is_where_the_agent_looks(tmp_path: Path) -> None:
    hf_cache(tmp_path / "hf", "org/draft")
    lines = synth.startup(NOW, 1, speculative_draft_model_path="org/draft")
    (tmp_path / "s.log").write_text(
        "\n".join([*lines, synth.decode_line(NOW + timedelta(minutes=1), 2.4)]) + "\n"
    )
    agent = _agent(tmp_path, hf_home=str(tmp_path / "hf"))
    try:
        agent.open()
        agent.step()
        run = agent.tracker.current("gpu")
        assert run is not None and run.config is not None and run.config.draft_config == LAYERS
        assert 'acceptmon_draft_config_missing{source="gpu"} 0.0' in _metrics(agent)
    finally:
        agent.close()


def test_a_missing_draft_config_is_one_warning_and_a_gauge(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    lines = [*synth.startup(NOW, 1), *synth.startup(NOW + timedelta(hours=1), 2)]
    (tmp_path / "s.log").write_text("\n".join(lines) + "\n")
    agent = _agent(tmp_path)
    try:
        with caplog.at_level(logging.WARNING):
            agent.open()
            agent.step()
        warned = [r for r in caplog.records if "no config.json found for draft model" in r.getMessage()]
        assert len(warned) == 1 and "changes inside it cannot be seen" in warned[0].getMessage()
        assert 'acceptmon_draft_config_missing{source="gpu"} 1.0' in _metrics(agent)
    finally:
        agent.close()


@pytest.mark.parametrize("declared", [None, {"num_steps": 3, "topk": 1}], ids=["unknown", "declared"])
def test_a_log_without_its_start_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, declared: dict[str, int] | None
) -> None:
    lines = [synth.decode_line(NOW + timedelta(seconds=i), 2.5) for i in range(5)]  # started long ago
    (tmp_path / "s.log").write_text("\n".join(lines) + "\n")
    agent = _agent(tmp_path, **({"speculative": declared} if declared else {}))
    try:
        with caplog.at_level(logging.WARNING):
            agent.open()
            agent.step()
        warned = [r for r in caplog.records if "no server_args line seen" in r.getMessage()]
        metrics = _metrics(agent)
        run = agent.tracker.current("gpu")
        assert run is not None
        if declared:
            assert not warned and 'acceptmon_run_settings_unknown{source="gpu"} 0.0' in metrics
            assert run.spec.slots == 3  # (2.5 - 1) / 3 = 50% per token
            assert 'acceptmon_spec_accept_rate{engine="sglang",source="gpu"} 0.5' in metrics
        else:
            assert len(warned) == 1 and 'acceptmon_run_settings_unknown{source="gpu"} 1.0' in metrics
    finally:
        agent.close()
