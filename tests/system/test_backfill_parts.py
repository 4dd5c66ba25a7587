"""History in parts, made into blocks by the real promtool while the logs are read, loaded into a
real Prometheus: at every sample instant it answers what the one whole document says.

Two logs over the same hours: the second's samples come after the first's parts were cut, so
their blocks overlap the first's in time (other series), which Prometheus merges.
"""

from __future__ import annotations

import json
import re
import shutil
import urllib.parse
import urllib.request
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path

import pytest

from acceptmon import cli
from acceptmon.apps.backfill import parts
from tests.support.tools import require_tool
from tests.support.tsdb import prometheus_on
from tests.support.wait import wait_for

pytestmark = pytest.mark.system

DEMO = (
    Path(__file__).resolve().parents[2] / "acceptmon" / "apps" / "demo" / "data" / "demo-eagle3-incident.log"
)
#: Prometheus's default lookback: an instant query answers each series' latest sample in (at - 5m, at].
LOOKBACK = 300.0
Series = tuple[tuple[str, str], ...]


def _backfill(out: Path, logs: list[Path]) -> int:
    names = [arg for i in range(len(logs)) for arg in ("--name", f"gpu-{i}")]
    return cli.main(["backfill", *map(str, logs), *names, "--out", str(out), "--timezone", "UTC"])


def _points(om: Path) -> dict[Series, list[tuple[float, float]]]:
    """Each series (its labels with ``__name__``, as Prometheus keeps them) → its (time, value) points."""
    out: dict[Series, list[tuple[float, float]]] = {}
    for line in om.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            continue
        head, value, ts = line.rsplit(" ", 2)
        name, _, labels = head.partition("{")
        pairs = [(k, v) for k, v in re.findall(r'(\w+)="([^"]*)"', labels) if v]  # "" is no label
        key = tuple(sorted([("__name__", name), *pairs]))
        out.setdefault(key, []).append((float(ts), float(value)))
    return out


def _expected(points: dict[Series, list[tuple[float, float]]], at: float) -> dict[Series, float]:
    out = {}
    for key, series in points.items():
        seen = [v for t, v in series if at - LOOKBACK < t <= at]
        if seen:
            out[key] = seen[-1]
    return out


@pytest.fixture
def logs(tmp_path: Path) -> list[Path]:
    copies = [tmp_path / "a.log", tmp_path / "b.log"]
    for copy in copies:
        shutil.copyfile(DEMO, copy)
    return copies


@pytest.fixture
def prometheus(tmp_path: Path, logs: list[Path], monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    require_tool("promtool")
    monkeypatch.setattr(parts, "PART_POINTS", 60)
    assert _backfill(tmp_path / "out", logs) == 0
    with prometheus_on(tmp_path / "out" / "blocks", tmp_path) as base:
        yield base


def _query(base: str, at: float) -> dict[Series, float]:
    url = f"{base}/api/v1/query?" + urllib.parse.urlencode(
        {"query": '{__name__=~"acceptmon_.+"}', "time": f"{at:.3f}"}
    )
    with urllib.request.urlopen(url, timeout=10) as r:
        result = json.load(r)["data"]["result"]
    return {tuple(sorted(s["metric"].items())): float(s["value"][1]) for s in result}


def test_prometheus_answers_the_whole_documents_values_from_blocks_made_in_parts(
    prometheus: str, tmp_path: Path, logs: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    written = sorted((tmp_path / "out").glob("acceptmon-*.om"))
    assert len(written) >= 6
    metas = [json.loads(p.read_text()) for p in (tmp_path / "out" / "blocks").glob("*/meta.json")]
    spans = sorted((m["minTime"], m["maxTime"]) for m in metas)
    assert any(b[0] < a[1] for a, b in pairwise(spans)), "no blocks overlap"

    monkeypatch.setattr(parts, "PART_POINTS", 1 << 30)  # the same history as one document
    assert _backfill(tmp_path / "whole", logs) == 0
    whole = _points(tmp_path / "whole" / "acceptmon.om")
    assert {dict(k)["source"] for k in whole} == {"gpu-0", "gpu-1"}
    instants = sorted({t for series in whole.values() for t, _ in series})
    checked = 0
    for at in instants[:: max(1, len(instants) // 30)] + instants[-1:]:
        expected = _expected(whole, at)
        assert _query(prometheus, at) == expected, at
        checked += len(expected)
    assert checked > 500


def test_the_blocks_are_made_while_reading(
    tmp_path: Path, logs: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each part is handed to promtool as soon as it is cut: the first part's blocks exist
    before the last part is written."""
    require_tool("promtool")
    monkeypatch.setattr(parts, "PART_POINTS", 60)
    blocks_then: list[int] = []
    finish = parts.Parts.finish

    def noted(self: parts.Parts) -> list[Path]:
        wait_for(lambda: any((tmp_path / "out" / "blocks").glob("*/meta.json")), 60, "a part's blocks")
        blocks_then.append(len(list((tmp_path / "out" / "blocks").glob("*/meta.json"))))
        return finish(self)

    monkeypatch.setattr(parts.Parts, "finish", noted)
    assert _backfill(tmp_path / "out", logs) == 0
    assert blocks_then and blocks_then[0] >= 1
