"""The recovery bound: it rules out only checks that would find no recovery, and most of them.

While a drop stays open, one-shot's recovery check would run every ``RECHECK`` intervals for
the rest of the log; ``Reference.cannot_recover`` lets a stretch skip the exact check where no
window ahead can be back within ``resolve_drop``, so the findings (resolved times included)
stay exactly the ones every check gives.
"""

from __future__ import annotations

import io
import random
from collections import Counter
from datetime import timedelta

import pytest

from acceptmon.detect import DetectSettings, recovery
from acceptmon.detect.findings import DROP
from acceptmon.detect.measure import PER_TOKEN, Measure
from acceptmon.detect.recovery import Ordered, Reference
from acceptmon.detect.series import Sliding
from acceptmon.ingest import Pipeline
from acceptmon.ingest.findings import FindingLog
from acceptmon.model import Chunk
from tests.unit.detect.test_batch import T0, _run_of, _steady
from tests.unit.detect.test_recovery import _strata


def _pairs(rng: random.Random, n: int, level: float, buckets: int) -> list[tuple[int, int]]:
    return [
        (rng.randrange(buckets), max(100, min(400, round(rng.gauss(level, 0.3) * 100)))) for _ in range(n)
    ]


@pytest.mark.parametrize("seed", range(60))
@pytest.mark.parametrize("measure", [Measure(), Measure(PER_TOKEN, (3, 5))])
def test_a_ruled_out_stretch_holds_no_recovery(seed: int, measure: Measure) -> None:
    """Every window along a stretch the bound rules out is, checked exactly, not recovered."""
    rng = random.Random(seed)
    cfg = DetectSettings(recent=rng.choice([7, 40, 100]), min_after=5)
    buckets = rng.randrange(1, 5)
    ref = Reference(_strata(rng, rng.randrange(0, 300), 2.6, buckets), measure)
    level = rng.uniform(1.6, 2.8)
    seq = _pairs(rng, rng.randrange(0, 2 * cfg.recent), level, buckets)
    ahead = _pairs(rng, rng.randrange(1, cfg.recent), rng.uniform(level - 0.2, 2.8), buckets)
    size, held = cfg.recent, len(seq)
    seq += ahead
    window = Ordered(_window_strata(seq[max(0, held - size) : held]))
    gone = Counter(b for b, _ in seq[max(0, held - size) : max(0, len(seq) - size)])
    added: dict[int, list[int]] = {}
    for b, v in ahead:
        added.setdefault(b, []).append(v)
    if not ref.cannot_recover(window, gone, added, cfg):
        return  # the bound cannot say here (about half the cases; the guard below needs some)
    for hi in range(held + 1, len(seq) + 1):
        assert not ref.recovered(Ordered(_window_strata(seq[max(0, hi - size) : hi])), cfg), hi


def _window_strata(pairs: list[tuple[int, int]]) -> dict[int, dict[int, int]]:
    window = Sliding(max(1, len(pairs)))
    window.extend([b for b, _ in pairs], [v for _, v in pairs])
    return window.strata


def test_the_bound_rules_out_stretches_deep_in_a_drop() -> None:
    """Guard against a property that holds by ruling out nothing."""
    rng = random.Random(1)
    cfg = DetectSettings()
    ref = Reference(_strata(rng, 300, 2.6, 3), Measure())
    seq = _pairs(rng, 100, 2.0, 3)
    window = Ordered(_window_strata(seq))
    ahead = _pairs(rng, 50, 2.0, 3)
    added: dict[int, list[int]] = {}
    for b, v in ahead:
        added.setdefault(b, []).append(v)
    assert ref.cannot_recover(window, Counter(b for b, _ in seq[:50]), added, cfg)
    back = _pairs(rng, 50, 2.6, 3)
    added = {}
    for b, v in back:
        added.setdefault(b, []).append(v)
    assert not ref.cannot_recover(window, Counter(b for b, _ in seq[:50]), added, cfg)


def _findings(lines: list[str]) -> tuple[str, int]:
    """One-shot's findings of ``lines`` read in one chunk, and the exact recovery checks made."""
    calls = 0
    exact = Reference.recovered

    def counted(ref: Reference, recent: Ordered, cfg: DetectSettings) -> bool:
        nonlocal calls
        calls += 1
        return exact(ref, recent, cfg)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Reference, "recovered", counted)
        pipeline = Pipeline()
        log = FindingLog(pipeline)
        pipeline.feed(Chunk("s", tuple(lines), 1))
        out = io.StringIO()
        log.write(out)
    assert [f.rule for f in log.findings.values()] == [DROP]
    return out.getvalue(), calls


def test_a_long_open_drop_skips_most_exact_checks_with_the_same_findings() -> None:
    """A drop open for 3000 intervals, then recovered: the same finding (resolved time included)
    as checking every ``RECHECK`` intervals, with a fraction of the exact checks."""
    lines = _run_of(_steady(600, 2.6), T0, 1) + _run_of(
        _steady(3000, 2.0, 3) + _steady(400, 2.6, 4), T0 + timedelta(hours=1), 2
    )
    bounded, fewer = _findings(lines)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(recovery, "SPANS", ())
        every, all_checks = _findings(lines)
    assert bounded == every
    assert '"resolved_at": null' not in bounded
    assert all_checks > 600
    assert fewer * 5 < all_checks
