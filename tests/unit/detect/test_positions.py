"""Per-position acceptance per run, and the words a drop finding gets from it."""

from __future__ import annotations

import json

from acceptmon.detect.positions import MAX_RUNS, Positions
from acceptmon.model import Meta, SpecSample


def _sample(*ratios: float, drafted: int = 300) -> SpecSample:
    return SpecSample(
        Meta("s", 1, None), None, None, 100, drafted, per_position=ratios, num_spec_tokens=len(ratios)
    )


def test_weighted_means_and_the_positions_that_fell() -> None:
    p = Positions()
    p.add("r1", _sample(0.8, 0.6, 0.4, drafted=300))
    p.add("r1", _sample(0.6, 0.4, 0.2, drafted=900))  # three times the drafts, three times the weight
    assert [round(v, 3) for v in p.means("r1") or []] == [0.65, 0.45, 0.25]
    p.add("r2", _sample(0.64, 0.2, 0.24))
    assert [i for i, _, _ in p.fell("r1", "r2")] == [1]  # 0.65→0.64 is noise, 0.25→0.24 too small
    assert p.words("r1", "r2") == "; per-position acceptance fell at position 1 (0.45 → 0.20)"
    assert p.words("r1", "r9") == "" and p.fell("r9", "r2") == []


def test_idle_intervals_count_nothing_and_memory_is_bounded() -> None:
    p = Positions()
    p.add("r1", _sample(0.0, 0.0, drafted=0))
    assert p.means("r1") is None
    for i in range(MAX_RUNS + 3):
        p.add(f"r{i}", _sample(0.5))
    assert p.means("r0") is None and p.means(f"r{MAX_RUNS + 2}") == [0.5]


def test_dump_and_load_round_trip_and_tolerate_junk() -> None:
    p = Positions()
    p.add("r1", _sample(0.8, 0.5))
    q = Positions()
    q.load(json.loads(json.dumps(p.dump())))
    assert q.means("r1") == p.means("r1")
    q.load([["r1", "nope", 1]])
    assert q.means("r1") is None
