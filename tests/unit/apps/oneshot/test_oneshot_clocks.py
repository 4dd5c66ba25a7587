"""Logs read together in one one-shot run each keep their own clock: none makes another look silent."""

from __future__ import annotations

import json
import random
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from acceptmon.cli import main
from acceptmon.testing import synth

T0 = datetime(2026, 11, 1, 9, 0, 0)


def _log(path: Path, start: datetime, seed: int) -> None:
    rng = random.Random(seed)
    path.write_text("\n".join([*synth.startup(start, seed), *synth.traffic(rng, start, 200, 2.4)]) + "\n")


def _rules(capsys: pytest.CaptureFixture[str], *paths: Path) -> list[tuple[str, str]]:
    assert main(["oneshot", "--format", "findings", "--timezone", "UTC", *map(str, paths)]) == 0
    found = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    return sorted((f["source"], f["rule"]) for f in found)


def test_no_stall_together_that_is_not_there_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old, new = tmp_path / "old.log", tmp_path / "new.log"
    _log(old, T0, 1)
    _log(new, T0 + timedelta(days=30), 2)  # a month later: the old log's last line is "30 days ago"
    alone = _rules(capsys, old) + _rules(capsys, new)
    together = _rules(capsys, old, new)
    assert together == sorted(alone)
    assert not any(rule == "log_stalled" for _, rule in together)
