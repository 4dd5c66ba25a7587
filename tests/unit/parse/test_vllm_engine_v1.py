"""vLLM v1's ``Initializing a V1 LLM engine (vX.Y.Z) with config: …`` opens a run when no
``non-default args`` line did, with its speculative config and version (issue 23 §5)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from acceptmon.ingest import Pipeline
from acceptmon.model import Chunk, ServerStart
from acceptmon.parse.line import LineParser

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "vllm" / "engine-v1-start.log"


def test_the_engine_line_opens_a_run_only_without_non_default_args_first() -> None:
    parser = LineParser("s", datetime(2026, 12, 1, 12, 0, tzinfo=UTC))
    lines = SAMPLE.read_text().splitlines()
    starts = [r for i, t in enumerate(lines, 1) if isinstance(r := parser.parse(t, i), ServerStart)]
    assert [s.meta.lineno for s in starts] == [2, 6]  # line 7 follows line 6's non-default args
    first = starts[0].args
    assert first["vllm_version"] == "0.11.0"
    assert first["speculative_config"] == {
        "method": "eagle",
        "model": "yuhuili/EAGLE-LLaMA3.1-Instruct-8B",
        "num_spec_tokens": 3,
    }


def test_the_run_it_opens_has_the_draft_and_the_version_in_its_snapshot() -> None:
    p = Pipeline()
    p.feed(Chunk("s", tuple(SAMPLE.read_text().splitlines()), 1))
    runs = p.tracker.runs("s")
    assert [r.started_lineno for r in runs] == [2, 6]
    configs = [r.config.server_args if r.config else {} for r in runs]
    # The engine line's version; after non-default args, the API server's version line before them.
    assert [c.get("vllm_version") for c in configs] == ["0.11.0", "0.11.1"]
    assert (runs[0].spec.slots, runs[1].spec.slots) == (3, 4)


def test_one_engine_line_per_dp_engine_opens_one_run() -> None:
    parser = LineParser("s", datetime(2026, 12, 1, 12, 0, tzinfo=UTC))
    line = SAMPLE.read_text().splitlines()[1]
    again = line.replace("EngineCore_DP0", "EngineCore_DP1")
    assert isinstance(parser.parse(line, 1), ServerStart) and parser.parse(again, 2) is None
