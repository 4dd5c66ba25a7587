"""Every shared sample reproduces its manifest through ``oneshot --format jsonl``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from acceptmon.cli import main
from tests.conftest import SAMPLES


def _manifest() -> list[dict]:
    path = SAMPLES / "manifest.json"
    return json.loads(path.read_text()) if path.exists() else [{"file": "<samples missing>"}]


@pytest.mark.parametrize("entry", _manifest(), ids=lambda e: e["file"])
def test_sample_matches_manifest(entry: dict, samples_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["oneshot", "--format", "jsonl", str(samples_dir / entry["file"])]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    kinds = [r["kind"] for r in records]
    decode = [r for r in records if r["kind"] == "decode"]
    assert len(decode) == entry["decode_lines"]
    assert kinds.count("prefill") == entry["prefill_lines"]
    assert kinds.count("server_args") == entry["server_args_lines"]
    assert kinds.count("ready") == entry["fired_up_lines"]
    assert [r["accept_len"] for r in decode if r["accept_len"] is not None] == entry["accept_len"]
    printed = [r["accept_rate_printed"] for r in decode if r["accept_rate_printed"] is not None]
    assert printed == entry["accept_rate"]
    for r in decode:
        assert {
            "source",
            "lineno",
            "ts",
            "ranks",
            "running_req",
            "token_usage",
            "gen_throughput",
            "queue_req",
            "graph",
            "extra",
            "accept_rate",
        } <= r.keys()
        if r["accept_len"] is not None:
            assert r["accept_rate"] is not None and 0.0 <= r["accept_rate"] <= 1.0


def test_normalised_rate_agrees_with_printed_rate_from_0_5_11(
    samples_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """0.5.11+ prints the same definition we normalise to; they must agree to rounding."""
    for name in ("v0.5.11-0.5.15-eagle3.log", "v0.5.23-ngram.log", "v0.5.19-0.5.23-eagle3.log"):
        main(["oneshot", "--format", "jsonl", str(samples_dir / name)])
        decode = [json.loads(x) for x in capsys.readouterr().out.splitlines() if '"decode"' in x]
        for r in decode:
            assert abs(r["accept_rate"] - r["accept_rate_printed"]) <= 0.006, (name, r["lineno"])
