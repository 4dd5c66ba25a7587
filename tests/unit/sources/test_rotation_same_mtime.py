"""Rotations copied in one second share an mtime: their names order them, and a join that
runs back in log time is warned about (issue 25 item 3)."""

from __future__ import annotations

import logging
import os
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from acceptmon.apps.runs import main as runs_main
from acceptmon.ingest.read import collect
from acceptmon.sources.files import expand
from acceptmon.sources.rotation import group_rotations
from acceptmon.testing import synth


def _run(path: Path, day: int, level: float) -> None:
    ts = datetime(2026, 11, day, 9, 0, 0)
    rng = random.Random(day)
    lines = synth.startup(ts, seed=day)
    lines += synth.traffic(rng, ts + timedelta(seconds=50), 90, level, spread=0.05)
    lines += synth.shutdown(ts + timedelta(seconds=400))
    path.write_text("\n".join(lines) + "\n")


def test_counters_order_before_mtime_and_mtime_only_between_schemes() -> None:
    same = group_rotations(["x.log", "x.log.1", "x.log.2", "x.log.10"], lambda _p: 5.0)
    assert same == [("x.log", ("x.log.10", "x.log.2", "x.log.1", "x.log"))]
    dates = group_rotations(["x.log", "x.log-20261202", "x.log-20261130"], lambda _p: 5.0)
    assert dates == [("x.log", ("x.log-20261130", "x.log-20261202", "x.log"))]
    age = {"x.log.1": 3.0, "x.log.2.gz": 3.0, "x.log-20261201.bz2": 1.0, "x.log": 9.0}
    assert group_rotations(sorted(age), age.__getitem__) == [
        ("x.log", ("x.log-20261201.bz2", "x.log.2.gz", "x.log.1", "x.log"))
    ]


def test_equal_mtimes_give_the_true_verdict(tmp_path: Path) -> None:
    _run(tmp_path / "server.log.2", 1, 2.4)
    _run(tmp_path / "server.log.1", 2, 1.6)
    _run(tmp_path / "server.log", 3, 2.4)
    for f in tmp_path.iterdir():
        os.utime(f, (1_700_000_000, 1_700_000_000))
    (lg,) = expand(str(tmp_path / "server.log*"))
    assert [Path(f).name for f in lg.files] == ["server.log.2", "server.log.1", "server.log"]
    _, table, _ = collect([lg], UTC)
    verdict = table.verdict(lg.name)
    assert verdict is not None and verdict.state == "better"


def test_a_join_back_in_time_is_warned_about(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # Renamed by hand: the names say .1 is newer than .2, the log times say otherwise.
    _run(tmp_path / "server.log.1", 1, 2.4)
    _run(tmp_path / "server.log.2", 2, 1.6)
    _run(tmp_path / "server.log", 3, 2.4)
    with caplog.at_level(logging.WARNING, "acceptmon.runs"):
        assert runs_main([str(tmp_path / "server.log*")], fmt="plain", tz=UTC) == 0
    warned = [r.getMessage() for r in caplog.records if "backwards" in r.getMessage()]
    assert len(warned) == 1 and "server.log.2" in warned[0] and "server.log.1" in warned[0]
