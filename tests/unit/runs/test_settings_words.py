"""A run's settings in words name only what is known: vLLM has no topk or tree draft tokens,
so its rows do not read ``topk=None draft_tokens=None`` (issue 25 §10)."""

from __future__ import annotations

from pathlib import Path

import pytest

from acceptmon.cli import main
from acceptmon.model import Run, SpecConfig
from acceptmon.notify.grafana import run_annotation
from acceptmon.runs.summary import describe_settings

VLLM = Path(__file__).resolve().parents[2] / "data" / "vllm" / "engine-v1-start.log"


def _run(spec: SpecConfig) -> Run:
    return Run("s", "r1", None, 1, None, spec)


def test_only_known_settings_are_named() -> None:
    assert describe_settings(_run(SpecConfig("eagle", 3))) == "eagle steps=3"
    sglang = SpecConfig("EAGLE3", 3, 1, 4)
    assert describe_settings(_run(sglang)) == "EAGLE3 steps=3 topk=1 draft_tokens=4"
    assert "None" not in run_annotation(_run(SpecConfig("eagle", 3)))["text"]


def test_vllm_rows_in_runs_read_no_none(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["runs", "--timezone", "UTC", str(VLLM)]) == 0
    out = capsys.readouterr().out
    assert "None" not in out and "eagle steps=3" in out and "eagle steps=4" in out


def test_a_start_without_steps_names_the_draft_and_gives_no_flag_hint() -> None:
    """llama.cpp logs its draft model but never --draft-max: --speculative would not apply."""
    from acceptmon.runs import snapshot

    spec = SpecConfig(draft_model_path="/models/d.gguf")
    run = Run("s", "r1", None, 1, snapshot({"model_draft": "/models/d.gguf"}, None, None), spec)
    words = describe_settings(run, top_len=3.92)
    assert words == (
        "speculative decoding with a draft model (steps not logged; steps >= 3, inferred from accept len up to 3.92)"
    )
    assert "--speculative" in describe_settings(_run(SpecConfig()), top_len=2.5)
