"""Acceptance in a log means speculation is on (issue 25 §8): a log whose start line rotated
away, llama.cpp's old counts-only line and LMDeploy's stats line are not "no speculative
decoding"; the steps are inferred (and said so) or given with ``--speculative``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from acceptmon.cli import main

DATA = Path(__file__).resolve().parents[3] / "data"
SGLANG = DATA / "sglang-samples" / "v0.5.19-0.5.23-eagle3.log"


def _rotated(tmp_path: Path) -> Path:
    """The SGLang sample as a log whose server_args line rotated away."""
    log = tmp_path / "server.log"
    lines = [t for t in SGLANG.read_text().splitlines(keepends=True) if "server_args=" not in t]
    log.write_text("".join(lines))
    return log


def _runs(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["runs", "--timezone", "UTC", *argv])
    return code, capsys.readouterr().out


def test_a_rotated_log_says_speculation_is_on_and_infers_the_steps(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _runs(capsys, str(_rotated(tmp_path)))
    assert code == 0 and "no speculative decoding" not in out
    assert "steps >= 2, inferred from accept len up to" in " ".join(out.split())
    assert "--speculative num_steps=N" in " ".join(out.split())


def test_speculative_flag_gives_the_steps_and_so_the_rate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = str(_rotated(tmp_path))
    _code, before = _runs(capsys, "--format", "json", log)
    code, after = _runs(capsys, "--format", "json", "--speculative", "num_steps=3", log)
    assert code == 0
    assert json.loads(before)["sources"][0]["runs"][0]["accept_rate"] is None
    run = json.loads(after)["sources"][0]["runs"][0]
    assert run["settings"]["num_steps"] == 3 and run["accept_rate"] is not None


@pytest.mark.parametrize("bad", ["steps=3", "num_steps=0", "num_steps=x", "num_steps"])
@pytest.mark.parametrize(
    "command", [["runs"], ["oneshot"], ["report", "-o", "r.html"], ["backfill", "--out", "blocks"]]
)
def test_a_bad_speculative_flag_is_a_clear_error(
    bad: str, command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    command = [c if c not in ("r.html", "blocks") else str(tmp_path / c) for c in command]
    assert main([*command, "--speculative", bad, str(_rotated(tmp_path))]) == 2
    err = capsys.readouterr().err
    assert "--speculative" in err and "Traceback" not in err


def test_llamacpp_old_counts_only_line_is_speculation_with_its_rate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "llama.log"
    log.write_text((DATA / "llamacpp" / "variants.log").read_text().splitlines()[0] + "\n")
    code, out = _runs(capsys, str(log))
    assert code == 0 and "no speculative decoding" not in out
    assert "61%" in out and "1 requests with acceptance counts" in " ".join(out.split())


def test_lmdeploy_stats_are_speculation(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _runs(capsys, str(DATA / "lmdeploy" / "stats.log"))
    assert code == 0 and "no speculative decoding" not in out
    assert "steps=3, inferred from the 3 per-position rates" in " ".join(out.split())


def test_oneshot_takes_the_same_flag_and_counts_tokens(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = str(_rotated(tmp_path))

    def accepted(*flags: str) -> float:
        assert main(["oneshot", "--timezone", "UTC", *flags, log]) == 0
        line = next(
            t for t in capsys.readouterr().out.splitlines() if t.startswith("acceptmon_spec_accepted")
        )
        return float(line.rsplit(" ", 1)[1])

    assert accepted() == 0.0  # accept len alone: no tokens without the steps
    assert accepted("--speculative", "num_steps=3") > 0.0


def test_llamacpp_counts_only_runs_get_a_verdict_on_their_rate(capsys: pytest.CaptureFixture[str]) -> None:
    """Two starts (the draft changed), 40 requests each of the old split line: judged by rate."""
    code, out = _runs(capsys, "--format", "json", str(DATA / "llamacpp" / "old-rate-restart.log"))
    doc = json.loads(out)["sources"][0]
    assert code == 3 and [r["accept_rate"] is not None for r in doc["runs"]] == [True, True]
    verdict = doc["verdict"]
    assert verdict["state"] == "worse" and verdict["words"].startswith("r2 vs r1: WORSE, accept rate -")
