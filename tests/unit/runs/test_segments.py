"""Segments of a running server (weight updates, run-time config, adaptive steps) and vLLM runs."""

from __future__ import annotations

import io
import json
from datetime import datetime, timedelta

import pytest

from acceptmon.ingest import Pipeline
from acceptmon.model import Chunk, Meta, RuntimeChange, SpecParamsUpdate
from acceptmon.runs import RunTracker
from acceptmon.runs.codec import run_from_dict, run_to_dict
from acceptmon.runs.summary import describe_change
from acceptmon.sources.chunks import read_chunks
from acceptmon.testing import changes, synth
from tests.conftest import ROOT
from tests.unit.parse.test_fast_path_parity import _consumers

T0 = datetime(2026, 3, 2, 9, 0, 0)
GOLDEN = ROOT / "tests" / "golden"


def _feed(lines: list[str], pipeline: Pipeline | None = None) -> Pipeline:
    pipeline = pipeline or Pipeline(year=2026)
    pipeline.feed(Chunk("s", tuple(lines), 1))
    return pipeline


def _sglang(*middle: str) -> list[str]:
    return [
        *synth.startup(T0, seed=1),
        synth.decode_line(T0 + timedelta(seconds=60), 2.7),
        *middle,
        synth.decode_line(T0 + timedelta(seconds=90), 1.1),
    ]


def test_a_weight_update_opens_one_segment_of_its_own_kind() -> None:
    p = _feed(_sglang(*changes.weight_update(T0 + timedelta(seconds=70), (" TP0", " TP1", " TP2"))))
    runs = p.tracker.runs("s")
    assert [(r.run_id, r.kind) for r in runs] == [("r1", "start"), ("r2", "weight_update")]
    seg = runs[1]
    assert seg.previous_run_id == "r1" and seg.reason == "Update weights end."
    assert seg.diff is not None and seg.diff.added == (("runtime.weight_updates", 1),)
    assert seg.config is not None and seg.config.server_args == runs[0].config.server_args  # type: ignore[union-attr]
    assert seg.config.hash != runs[0].config.hash  # type: ignore[union-attr]
    assert seg.started_lineno == len(synth.startup(T0, seed=1)) + 1 + 3 + 1  # TP0's end line
    assert "online weight update" in describe_change(seg) and "no restart" in describe_change(seg)
    assert p.store.stats("s").counters["server_starts"] == 1  # a segment is no start


def test_a_second_weight_update_counts_on_and_a_restart_forgets_them() -> None:
    lines = _sglang(
        *changes.weight_update(T0 + timedelta(seconds=70)), *changes.weight_update(T0 + timedelta(seconds=80))
    )
    lines += synth.startup(T0 + timedelta(minutes=5), seed=2)
    runs = _feed(lines).tracker.runs("s")
    assert [r.kind for r in runs] == ["start", "weight_update", "weight_update", "start"]
    assert runs[2].diff is not None and runs[2].diff.changed == (("runtime.weight_updates", 1, 2),)
    assert runs[3].diff is not None and not runs[3].diff  # random_seed only: a plain restart


def test_a_context_override_changes_the_snapshot_and_the_settings() -> None:
    ts = T0 + timedelta(seconds=70)
    lines = _sglang(
        changes.context_override(ts, speculative_accept_threshold_single=0.5),
        changes.context_override(ts, rank=" TP1", speculative_accept_threshold_single=0.5),
        changes.context_override(ts, speculative_accept_threshold_single=0.5),  # a repeat: nothing new
        changes.context_override(ts, speculative_num_steps=5, speculative_num_draft_tokens=6),
    )
    runs = _feed(lines).tracker.runs("s")
    assert [r.kind for r in runs] == ["start", "config_override", "config_override"]
    assert runs[1].diff is not None and runs[1].diff.changed == (
        ("args.speculative_accept_threshold_single", 1.0, 0.5),
    )
    assert runs[1].reason == "set speculative_accept_threshold_single"
    assert (runs[2].spec.num_steps, runs[2].spec.slots) == (5, 5)


def test_global_server_args_take_only_the_keys_of_the_start_line() -> None:
    line = (
        f"[{synth.stamp(T0 + timedelta(seconds=70))} TP0] Global server args updated! "
        "global_server_args_dict={'attention_backend': 'fa3', 'speculative_accept_threshold_acc': 0.3, "
        "'speculative_accept_threshold_single': 0.7, 'random_seed': 5}"
    )
    runs = _feed(_sglang(line)).tracker.runs("s")
    assert runs[-1].kind == "config_override"
    assert runs[-1].diff is not None and runs[-1].diff.keys() == ["args.speculative_accept_threshold_single"]


def test_adaptive_steps_open_a_segment_with_the_new_draft_length() -> None:
    line = (
        f"[{synth.stamp(T0 + timedelta(seconds=70))} TP0] Adaptive spec params updated: steps 3 -> 1 "
        "(ema_accept_len=1.40)"
    )
    runs = _feed(_sglang(line)).tracker.runs("s")
    assert [r.kind for r in runs] == ["start", "spec_params"]
    assert runs[1].reason == "steps 3 -> 1" and runs[1].spec.slots == 1
    assert runs[1].diff is not None and set(runs[1].diff.keys()) == {
        "args.speculative_num_steps",
        "args.speculative_num_draft_tokens",
    }


def test_a_change_as_the_first_line_or_after_a_stop_opens_nothing_more() -> None:
    tracker = RunTracker()
    tracker.observe(RuntimeChange(Meta("s", 1, None), "weight_update"))
    tracker.observe(SpecParamsUpdate(Meta("s", 2, None), 3, 2, None))
    assert [r.kind for r in tracker.runs("s")] == ["log", "spec_params"]
    runs = _feed(
        [*_sglang(), *synth.shutdown(T0 + timedelta(minutes=2)), *changes.weight_update(T0)]
    ).tracker.runs("s")
    assert [r.kind for r in runs] == ["start"]


def test_segments_survive_the_codec_and_the_checkpoint() -> None:
    p = _feed(_sglang(*changes.weight_update(T0 + timedelta(seconds=70))))
    seg = p.tracker.current("s")
    assert seg is not None and run_from_dict(json.loads(json.dumps(run_to_dict(seg)))) == seg
    restored = RunTracker()
    restored.restore(json.loads(json.dumps(p.tracker.checkpoint())))
    assert restored.current("s") == seg
    # More lines after the restart: no second segment, and the next update counts on.
    again = Pipeline(tracker=restored)
    _feed(
        [
            synth.decode_line(T0 + timedelta(seconds=95), 1.1),
            *changes.weight_update(T0 + timedelta(seconds=99)),
        ],
        again,
    )
    assert [r.run_id for r in restored.runs("s")] == ["r1", "r2", "r3"]
    assert restored.runs("s")[-1].config.runtime == {"weight_updates": 2}  # type: ignore[union-attr]


def test_vllm_start_lines_open_runs_with_their_speculative_settings() -> None:
    lines = [
        changes.non_default_args_line(T0, api_key=["sk-live-0123456789abcdef"]),
        changes.spec_line(T0 + timedelta(seconds=10), [0.8, 0.6, 0.4]),
        changes.engine_config_line(T0 + timedelta(minutes=1), "ibm-fms/llama3-8b-accelerator", 5),
    ]
    p = _feed(lines)
    v1, v0 = p.tracker.runs("s")
    assert (v1.spec.algorithm, v1.spec.slots) == ("eagle3", 3)
    assert v1.spec.draft_model_path == "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"
    assert "sk-live" not in json.dumps(run_to_dict(v1)) and "<redacted:" in json.dumps(run_to_dict(v1))
    assert (v0.spec.algorithm, v0.spec.slots) == ("draft_model", 5)
    assert v0.spec.model_path == "meta-llama/Meta-Llama-3-8B-Instruct"
    assert v0.config is not None and v0.config.server_args["vllm_version"] == "0.6.3"
    assert v0.config.server_args["dtype"] == "torch.bfloat16"
    assert p.store.stats("s").counters["server_starts"] == 2


@pytest.mark.parametrize("case", ["vllm-config-change", "sglang-weight-sync"])
@pytest.mark.parametrize("chunk_lines", [1, 7])
def test_the_agents_small_chunks_find_what_oneshot_finds(case: str, chunk_lines: int) -> None:
    """A live agent reads a few lines per poll; one-shot reads the file whole. Same findings."""
    data = (GOLDEN / case / "input.log").read_bytes()
    whole = _consumers(data, bulk=True)
    polled = _consumers(data, bulk=True, chunk_lines=chunk_lines)
    assert polled[:4] == whole[:4]
    assert '"rule": "acceptance_drop_after_change"' in whole[2]


def test_a_vllm_drop_finding_names_the_positions_that_fell() -> None:
    data = (GOLDEN / "vllm-config-change" / "input.log").read_bytes()
    p = Pipeline(year=2026)
    from acceptmon.ingest.findings import FindingLog

    log = FindingLog(p)
    for chunk, _ in read_chunks("s", io.BytesIO(data)):
        p.feed(chunk)
    out = io.StringIO()
    log.write(out)
    drop = json.loads(out.getvalue().splitlines()[0])
    assert drop["rule"] == "acceptance_drop_after_change" and drop["changed_keys"] == [
        "args.speculative_config.model"
    ]
    assert "fell at positions 1, 2 (" in drop["summary"] and "position 0" not in drop["summary"]
    assert p.store.stats("s").positions and len(p.store.stats("s").positions) == 3
