"""``acceptmon backfill``: old logs → OpenMetrics → TSDB blocks (real promtool) → a real Prometheus.

The blocks are the Prometheus data directory; queried at past instants, the
Decode count and accept length equal what the log says there, and a dashboard
query (on raw metrics) returns the history. On main the samples carried the end of
their chunk: Prometheus answered 2.37 at an instant where the log said 2.23.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.parse
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.support.tools import require_tool
from tests.support.tsdb import prometheus_on

pytestmark = pytest.mark.system

DEMO = (
    Path(__file__).resolve().parents[2] / "acceptmon" / "apps" / "demo" / "data" / "demo-eagle3-incident.log"
)


def _query(base: str, expr: str, at: float) -> list[dict]:
    url = f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": expr, "time": f"{at:.3f}"})
    with urllib.request.urlopen(url, timeout=10) as r:
        return list(json.load(r)["data"]["result"])


@pytest.fixture
def backfilled(tmp_path: Path) -> Path:
    require_tool("promtool")
    out = tmp_path / "out"
    cmd = [
        sys.executable,
        "-m",
        "acceptmon",
        "backfill",
        str(DEMO),
        "--out",
        str(out),
        "--instance",
        "gpu-7:9469",
        "--timezone",
        "UTC",
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert "wrote TSDB blocks" in done.stdout and "retention" in done.stdout
    return out


@pytest.fixture
def prometheus(tmp_path: Path, backfilled: Path) -> Iterator[str]:
    with prometheus_on(backfilled / "blocks", tmp_path) as base:
        yield base


def _points(om: Path, name: str) -> list[tuple[float, float]]:
    out = []
    for line in om.read_text().splitlines():
        if line.startswith(name + "{"):
            *_, value, ts = line.split(" ")
            out.append((float(ts), float(value)))
    return out


def test_history_is_queryable_in_prometheus(prometheus: str, backfilled: Path) -> None:
    om = backfilled / "acceptmon.om"
    counts = _points(om, "acceptmon_decode_batches_total")
    lengths = _points(om, "acceptmon_spec_accept_length")
    assert len(counts) > 5 and counts[-1][1] == 270
    for at, value in [counts[len(counts) // 2], counts[-1]]:
        got = _query(prometheus, "acceptmon_decode_batches_total", at)
        assert [float(r["value"][1]) for r in got] == [value], (at, got)
        assert got[0]["metric"]["instance"] == "gpu-7:9469" and got[0]["metric"]["job"] == "acceptmon"
    # A run at ~19% acceptance two days before "now": the dashboard's accept-length panel shows it.
    at, value = next((t, v) for t, v in lengths if v < 1.8)
    expr = 'acceptmon_spec_accept_length{instance=~".*", source=~".*"}'
    got = _query(prometheus, expr, at)
    assert [round(float(r["value"][1]), 4) for r in got] == [round(value, 4)]


def _log_at(at: float) -> tuple[int, float | None]:
    """What the demo log says at ``at``: Decode lines logged by then, and the last one's accept length."""
    count, last = 0, None
    for line in DEMO.read_text().splitlines():
        m = re.match(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)[^\]]*\] Decode batch.*accept len: ([\d.]+)", line)
        if m and datetime.fromisoformat(m.group(1)).replace(tzinfo=UTC).timestamp() <= at:
            count, last = count + 1, float(m.group(2))
    return count, last


def test_prometheus_answers_what_the_log_says_at_each_instant(prometheus: str, backfilled: Path) -> None:
    instants = [t for t, _ in _points(backfilled / "acceptmon.om", "acceptmon_decode_batches_total")]
    checked = 0
    for at in instants[:: max(1, len(instants) // 40)]:
        count, last = _log_at(at)
        got = _query(prometheus, "acceptmon_decode_batches_total", at)
        assert [float(r["value"][1]) for r in got] == [count], at
        if last is not None:
            got = _query(prometheus, "acceptmon_spec_accept_length", at)
            assert [float(r["value"][1]) for r in got] == [last], at
            checked += 1
    assert checked >= 10
