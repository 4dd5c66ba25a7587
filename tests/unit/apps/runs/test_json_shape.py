"""`runs --format json` has one top level however many logs it reads (issue 25 §10): a script
written against one log keeps working on a glob."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime
from pathlib import Path

import pytest

from acceptmon.apps.runs import main as runs_main
from acceptmon.testing import synth


def _log(path: Path) -> None:
    ts = datetime(2026, 11, 1, 9, 0, 0)
    lines = synth.startup(ts, seed=1) + list(synth.traffic(random.Random(1), ts, 20, 2.4))
    path.write_text("\n".join(lines) + "\n")


def test_one_log_and_two_logs_share_the_top_level(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _log(tmp_path / "a.log")
    _log(tmp_path / "b.log")
    docs = []
    for source in ("a.log", "*.log"):
        assert runs_main([str(tmp_path / source)], fmt="json", tz=UTC) == 0
        docs.append(json.loads(capsys.readouterr().out))
    one, two = docs
    assert one.keys() == two.keys() == {"sources", "fleet"}
    assert one["fleet"]["configs"] == []
    assert [d["source"] for d in one["sources"]] == [str(tmp_path / "a.log")]
    assert len(two["sources"]) == 2
    assert one["sources"][0].keys() == two["sources"][0].keys() == {"source", "runs", "verdict"}
