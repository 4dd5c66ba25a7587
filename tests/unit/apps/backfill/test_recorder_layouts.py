"""The recorder's shortcuts record and write exactly what sample-by-sample recording did.

``Recorder.snapshot`` replays a known sequence of series (its layout) instead of looking each
sample up, and ``write`` makes each value's text once per part. Here a store's source changes
between snapshots (error kinds and gauges appear, a gauge goes missing or not finite, the
histogram starts, a second source comes and goes, instants repeat or go back), and what is
recorded is compared with a plain model of the recording: each run of samples of one series
is one point, and a point at an instant already recorded replaces that series' last point.
"""

from __future__ import annotations

import io
import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acceptmon.apps.backfill import openmetrics
from acceptmon.apps.backfill.openmetrics import Recorder, _number, _Texts
from acceptmon.metrics.collect import STORE_CATALOGUE, MetricDef, SourceSample, source_samples
from acceptmon.metrics.store import SourceStats

EXTRA = {"job": "acceptmon", "instance": "h:1"}
Snapshot = tuple[list[tuple[MetricDef, list[SourceSample]]], float]
#: (ts, sample name, sorted labels with the extra ones, value), series by series.
Point = list[tuple[str, tuple[tuple[str, str], ...], float]]


def _model(
    snapshots: list[Snapshot],
) -> dict[tuple[str, tuple[tuple[str, str], ...]], list[tuple[float, Point]]]:
    """Sample-by-sample recording: a family's runs of one series (labels without ``le``)."""
    out: dict[tuple[str, tuple[tuple[str, str], ...]], list[tuple[float, Point]]] = {}
    for families, ts in snapshots:
        for m, samples in families:
            current: object = None
            for name, names, values, value in samples:
                if not math.isfinite(value):
                    continue
                labels = {**EXTRA, **dict(zip(names, values, strict=True))}
                key = (m.name, tuple(sorted((k, v) for k, v in labels.items() if k != "le")))
                own = out.setdefault(key, [])
                if key != current:
                    current, points = key, []
                    if own and own[-1][0] >= ts:
                        own[-1] = (own[-1][0], points)
                    else:
                        own.append((ts, points))
                points.append((name, tuple(sorted(labels.items())), value))
    return out


def _recorded(recorder: Recorder) -> list[tuple[float, str, tuple[tuple[str, str], ...], float]]:
    return sorted(recorder.samples())


def _expected(snapshots: list[Snapshot]) -> list[tuple[float, str, tuple[tuple[str, str], ...], float]]:
    return sorted(
        (ts, name, labels, value)
        for series in _model(snapshots).values()
        for ts, points in series
        for name, labels, value in points
    )


def _store_snapshot(source: str, stats: SourceStats) -> list[tuple[MetricDef, list[SourceSample]]]:
    return [(m, list(source_samples(m, source, stats, "host"))) for m in STORE_CATALOGUE]


def _record(snapshots: list[Snapshot]) -> Recorder:
    recorder = Recorder(EXTRA)
    for families, ts in snapshots:
        # as the sampler gives them: generators, consumed by the recorder
        recorder.snapshot(((m, iter(samples)) for m, samples in families), ts)
    return recorder


def _changing_source(seed: int, n: int, back: bool = True) -> list[Snapshot]:
    """Snapshots of two sources whose series appear and disappear along the way (``back``:
    the time goes back now and then)."""
    rng = random.Random(seed)
    stats = {"a": SourceStats(engine="sglang"), "b": SourceStats(engine="vllm")}
    snapshots: list[Snapshot] = []
    ts = 1_000.0
    for _ in range(n):
        source = rng.choice(["a", "a", "a", "b"])
        s = stats[source]
        s.counters["lines"] += rng.randrange(0, 3)
        if rng.random() < 0.2:  # a parse error kind appears, or the kinds go
            s.error_kinds = {} if rng.random() < 0.3 else {**s.error_kinds, rng.choice("xyz"): 1.0}
        for gauge in ("accept_len", "running_req"):  # gauges come and go, now and then not finite
            s.gauges[gauge] = rng.choice([None, 1.5, 2.0, math.nan, math.inf, -0.0, float(rng.randrange(3))])
        if rng.random() < 0.3:  # the histogram starts
            s.buckets[rng.randrange(len(s.buckets))] += 1
            s.counters["accept_len_count"] += 1
            s.counters["accept_len_sum"] += rng.choice([1.5, 2.25, math.nan])
        if rng.random() < 0.2:  # vLLM positions change in number
            s.positions = [rng.random() for _ in range(rng.randrange(0, 4))]
        ts += rng.choice([0.0, 0.0, 1.0, 60.0, -30.0 if back else 0.0])  # the same instant again, or earlier
        snapshots.append((_store_snapshot(source, s), ts))
    return snapshots


@pytest.mark.parametrize("seed", range(8))
def test_layouts_record_what_sample_by_sample_recording_did(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    snapshots = _changing_source(seed, 300)
    walked: list[int] = []
    layout = Recorder._layout

    def counted(self: Recorder, *args: object) -> object:
        walked.append(1)
        return layout(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(Recorder, "_layout", counted)
    recorder = _record(snapshots)
    assert _recorded(recorder) == _expected(snapshots)
    assert recorder.points == sum(len(series) for series in _model(snapshots).values())
    assert 0 < len(walked) < len(snapshots)  # known layouts were replayed, new ones walked


def test_a_series_split_within_a_snapshot_keeps_its_later_run() -> None:
    """A family whose samples of one series are not together: the later run is the point."""
    m = STORE_CATALOGUE[1]  # acceptmon_parse_errors: (source, engine, kind)
    names = ("source", "engine", "kind")

    def samples(a: float, b: float, c: float) -> list[SourceSample]:
        return [
            ("acceptmon_parse_errors_total", names, ("s", "e", "x"), a),
            ("acceptmon_parse_errors_total", names, ("s", "e", "y"), b),
            ("acceptmon_parse_errors_total", names, ("s", "e", "x"), c),
        ]

    snapshots: list[Snapshot] = [([(m, samples(1, 2, 3))], 10.0), ([(m, samples(4, 5, 6))], 20.0)]
    snapshots += [([(m, samples(7, 8, 9))], 20.0), ([(m, samples(1, 1, 1))], 30.0)]
    recorder = _record(snapshots)
    assert _recorded(recorder) == _expected(snapshots)
    assert [v for ts, _, labels, v in _recorded(recorder) if ("kind", "x") in labels] == [3, 9, 1]


def test_parts_cut_between_layout_replays_write_the_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """Parts cut while layouts are replayed (their series cleared, not forgotten). A cut comes
    before an instant after every one recorded, so with time not going back the parts hold
    the one recording's points."""
    monkeypatch.setattr(openmetrics, "LAYOUTS", 3)  # layouts forgotten and walked again too
    snapshots = _changing_source(99, 400, back=False)
    recorder = Recorder(EXTRA)
    parts: list[list[tuple[float, str, tuple[tuple[str, str], ...], float]]] = []

    def cut() -> None:
        recorder.write(io.StringIO())
        parts.append(_recorded(recorder))
        recorder.clear()

    recorder.cut_every(50, cut)
    for families, ts in snapshots:
        recorder.snapshot(families, ts)
    cut()
    assert len(parts) > 2
    assert sorted(s for part in parts for s in part) == _expected(snapshots)


TRICKY = [0, 0.0, -0.0, 1, 1.0, True, -5, -5.0, 0.1, 1.5, -2.5, 1e-300, 5e-324, 999_999_999_999_999,
          999_999_999_999_999.0, 10**15, 1e15, -(10**15), -1e15, 1e16, 2**53 + 1, float(2**53), 1.7976931348623157e308,
          123_456_789_012_345.6]  # fmt: skip


@given(st.permutations(TRICKY))
@settings(max_examples=50, deadline=None)
def test_value_texts_are_numbers_texts_whichever_equal_value_came_first(values: list[float]) -> None:
    """1 and 1.0, 0.0 and -0.0, 10**15 and 1e15 share an entry: their texts must agree."""
    texts = _Texts()
    assert [texts[v] for v in values] == [_number(v) for v in values]
    assert [texts[v] for v in reversed(values)] == [_number(v) for v in reversed(values)]


def test_value_texts_equal_numbers_texts_for_random_values() -> None:
    rng = random.Random(7)
    values = [rng.choice([rng.uniform(-1e17, 1e17), float(rng.randrange(-(10**16), 10**16)), rng.random()])
              for _ in range(5000)]  # fmt: skip
    values += [float(int(v)) for v in values] + [int(v) for v in values]
    texts = _Texts()
    assert [texts[v] for v in values] == [_number(v) for v in values]
