"""The recovery bound: it rules out only checks that would find no recovery, and most of them.

While a drop stays open, one-shot's recovery check would run every ``RECHECK`` intervals for
the rest of the log; ``Reference.may_recover`` lets a stretch skip the exact check where no
window of a stretch ahead can be back within ``resolve_drop``, so the findings (resolved times
included) stay exactly the ones every check gives.
"""

from __future__ import annotations

import io
import random
from collections import Counter
from datetime import timedelta

import pytest

from acceptmon.detect import DetectSettings
from acceptmon.detect.findings import DROP
from acceptmon.detect.measure import PER_TOKEN, Measure
from acceptmon.detect.recovery import Ordered, Reference
from acceptmon.ingest import Pipeline
from acceptmon.ingest.findings import FindingLog
from acceptmon.model import Chunk
from tests.unit.detect.test_batch import T0, _run_of, _steady
from tests.unit.detect.test_recovery import _strata


def _columns(rng: random.Random, n: int, level: float, buckets: int) -> tuple[list[int], list[int]]:
    bs = [rng.randrange(-1, buckets - 1) for _ in range(n)]
    return bs, [max(100, min(400, round(rng.gauss(level, 0.3) * 100))) for _ in range(n)]


def _may_recover(
    ref: Reference, cols: tuple[list[int], list[int]], k: int, end: int, size: int, cfg: DetectSettings
) -> bool:
    """The bound over the windows ending at ``k``..``end`` of ``cols`` (each the last ``size``)."""
    bs, vs = cols
    keys = ref.keys(bs, vs, cfg)
    union = Counter(keys[max(0, k - size) : end])
    return Reference.may_recover(union, Counter(bs[max(0, end - size) : k]), cfg.min_stratum)


@pytest.mark.parametrize("seed", range(80))
@pytest.mark.parametrize("measure", [Measure(), Measure(PER_TOKEN, (3, 5))])
def test_a_ruled_out_stretch_holds_no_recovery(seed: int, measure: Measure) -> None:
    """Every window along a stretch the bound rules out is, checked exactly, not recovered."""
    rng = random.Random(seed)
    cfg = DetectSettings(recent=rng.choice([7, 40, 100]), min_after=5)
    buckets = rng.randrange(1, 5)
    ref = Reference(_strata(rng, rng.randrange(0, 300), 2.6, buckets), measure)
    level = rng.uniform(1.6, 2.8)
    held = rng.randrange(1, 2 * cfg.recent)
    bs, vs = _columns(rng, held, level, buckets)
    more = _columns(rng, rng.randrange(1, cfg.recent), rng.uniform(level - 0.2, 2.8), buckets)
    cols = (bs + more[0], vs + more[1])
    if _may_recover(ref, cols, held, len(cols[0]), cfg.recent, cfg):
        return  # the bound cannot say here (about half the cases; the guard below needs some)
    for hi in range(held, len(cols[0]) + 1):
        lo = max(0, hi - cfg.recent)
        assert not ref.recovered(Ordered.of(cols[0][lo:hi], cols[1][lo:hi]), cfg), hi


def test_the_bound_rules_out_stretches_deep_in_a_drop() -> None:
    """Guard against a property that holds by ruling out nothing."""
    rng = random.Random(1)
    cfg = DetectSettings()
    ref = Reference(_strata(rng, 300, 2.6, 3), Measure())
    seq = _columns(rng, 150, 2.0, 3)
    assert not _may_recover(ref, seq, 100, 150, 100, cfg)
    back = _columns(rng, 50, 2.6, 3)
    assert _may_recover(ref, (seq[0][:100] + back[0], seq[1][:100] + back[1]), 100, 150, 100, cfg)


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
        patch.setattr(Reference, "may_recover", staticmethod(lambda *_: True))
        every, all_checks = _findings(lines)
    assert bounded == every
    assert '"resolved_at": null' not in bounded
    assert all_checks > 600
    assert fewer * 20 < all_checks
