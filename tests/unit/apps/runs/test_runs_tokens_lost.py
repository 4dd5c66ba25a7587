"""A WORSE verdict of ``acceptmon runs`` says the tokens the latest run lost over its length when
the log says gen throughput (SGLang): what it generated × (before/after − 1), ``detect.cost``'s
arithmetic, with the run's generated tokens summed as the agent's cost meter sums them."""

from __future__ import annotations

import json
import random
import re
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from acceptmon.cli import main
from acceptmon.detect.cost import tokens_lost
from acceptmon.testing import synth

T0 = datetime(2026, 11, 30, 9, 0, 0)
LINE = re.compile(r"\[(\S+ \S+) TP0\] Decode batch.*gen throughput \(token/s\): ([\d.]+)")


def _run(start: datetime, level: float, seed: int, steps: int) -> list[str]:
    body = synth.traffic(random.Random(seed), start + timedelta(seconds=50), 120, level)
    return [*synth.startup(start, seed=seed, speculative_num_steps=steps), *body]


def _generated(lines: list[str]) -> float:
    """Tokens the lines generated: each line's throughput over the gap since the line before."""
    total, last = 0.0, None
    for line in lines:
        m = LINE.match(line)
        if m is None:
            continue
        at = datetime.fromisoformat(m[1]).timestamp()
        if last is not None and at > last:
            total += float(m[2]) * (at - last)
        last = at
    return total


def _tokens(n: float) -> str:
    digits = len(str(int(n))) - 3
    return f"{round(n, -digits):,.0f}"


def test_worse_verdict_says_tokens_lost_over_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    second = _run(T0 + timedelta(hours=5), 1.57, 2, 5)
    log = tmp_path / "server.log"
    log.write_text("\n".join([*_run(T0, 2.41, 1, 3), *second]) + "\n")
    assert main(["runs", "--timezone", "UTC", "--format", "json", str(log)]) == 3
    verdict = json.loads(capsys.readouterr().out)["sources"][0]["verdict"]
    want = tokens_lost(_generated(second), -verdict["relative_change"])
    assert want > 1000
    assert verdict["words"].endswith(f"≈ {_tokens(want)} tokens over the run")
    assert "costing ≈ 34% of decode throughput" in verdict["words"]


def test_no_tokens_said_when_not_worse(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "server.log"
    log.write_text("\n".join([*_run(T0, 1.57, 1, 3), *_run(T0 + timedelta(hours=5), 2.41, 2, 5)]) + "\n")
    assert main(["runs", "--timezone", "UTC", str(log)]) == 0
    assert "tokens over the run" not in capsys.readouterr().out
