"""Backfill's parts: a Decode batch cut at every sample leaves the detector as its records do.

Backfill hands the detector each batch in the parts the sampler stores (thousands a run)
and evaluates the source after each. The windows keep a part aside as its columns
(``Sliding._defer``), even a short one once their histograms wait: the findings after every
part and the state at the end must be the per-record path's.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from datetime import timedelta
from functools import partial
from typing import Any

import pytest

from acceptmon.detect import Detector, DetectSettings, bulk, series
from acceptmon.detect.series import Sliding
from acceptmon.ingest import Pipeline
from acceptmon.model import Chunk, Finding, Record, Run
from acceptmon.runs.batch import DecodeBatch
from tests.unit.detect.test_evaluated_batches import CASES

#: Part lengths: single lines and short parts (line by line, or taken without histograms after
#: long ones), and long ones.
LENGTHS = (1, 3, 5, 20, 63, 64, 150, 400)


class _Both:
    """Runs and records to two detectors; each batch cut at random into parts, which one takes
    as parts and the other as their records, both evaluated after every part."""

    def __init__(self, config: DetectSettings, seed: int) -> None:
        self.parts = Detector(config, judge_ending_runs=True)
        self.records = Detector(config, judge_ending_runs=True)
        self.rng = random.Random(seed)
        self.found: list[tuple[list[Finding], list[Finding]]] = []

    def _both(self, act: Callable[[Detector], Any]) -> None:
        self.found.append((act(self.parts), act(self.records)))

    def observe_run_start(self, run: Run) -> None:
        self.parts.observe_run_start(run)
        self.records.observe_run_start(run)
        self._both(lambda d: d.judged(run))

    def observe(self, record: Record) -> None:
        self.parts.observe(record)
        self.records.observe(record)

    def observe_batch(self, batch: DecodeBatch) -> None:
        offsets, i = batch.offsets(), 0
        while i < batch.n:
            j = min(batch.n, i + self.rng.choice(LENGTHS))
            part = batch.part(i, j, offsets)
            self.parts.observe_batch(part)
            for record in part.records():
                self.records.observe(record)
            last = self.records.last_time("s")
            if self.rng.random() < 0.2 and last is not None:  # an agent's timer, well after: a stall
                self._both(partial(Detector.evaluate, now=last + timedelta(minutes=10)))
            else:  # backfill's sample, by the source's own clock
                self._both(partial(Detector.evaluate, source="s"))
            i = j


def _state(detector: Detector) -> str:
    return json.dumps(detector.checkpoint(), sort_keys=True, default=str)


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("seed", range(2))
def test_parts_leave_what_their_records_leave(name: str, seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    lines, config = CASES[name]
    taken, deferred = 0, 0
    observe_batch, defer = bulk.observe_batch, Sliding._defer

    def counted_batch(*args: Any) -> bool:
        nonlocal taken
        took = observe_batch(*args)
        taken += took
        return took

    def counted_defer(window: Sliding, *args: Any) -> None:
        nonlocal deferred
        deferred += 1
        defer(window, *args)

    monkeypatch.setattr(bulk, "observe_batch", counted_batch)
    monkeypatch.setattr(Sliding, "_defer", counted_defer)
    pipeline = Pipeline()
    both = _Both(config, seed)
    pipeline.consumers.append(both)
    for at in range(0, len(lines), 5000):
        pipeline.feed(Chunk("s", tuple(lines[at : at + 5000]), at + 1))
    for parts, records in both.found:
        assert parts == records
    assert both.parts.evaluate() == both.records.evaluate()
    assert _state(both.parts) == _state(both.records)
    assert taken > 0 and deferred > 0  # parts took the bulk path, and the windows kept some aside


def test_short_parts_after_long_ones_count_nothing_until_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tail and recent windows, whose histograms wait after a long part, take short parts
    without counting them again; what is read then is what one add per interval leaves."""
    counted = 0
    count = series._counted

    def counting(pairs: Any) -> series.Strata:
        nonlocal counted
        counted += 1
        return count(pairs)

    monkeypatch.setattr(series, "_counted", counting)
    for size, max_age, keep in [(2000, 1800.0, 200), (100, None, 0)]:
        bulk, one = Sliding(size, max_age, keep), Sliding(size, max_age, keep)
        clock = 0.0
        for part in range(60):
            n = 300 if part % 10 == 0 else 1 + part % 40  # a long part, then short ones
            ats = [clock + 3.0 * t for t in range(n)]
            clock += 3.0 * n
            buckets, values = [(part + t) % 3 for t in range(n)], [200 + (part * t) % 9 for t in range(n)]
            bulk.extend(buckets, values, ats if max_age else ())
            for b, v, at in zip(buckets, values, ats, strict=True):
                one.add(b, v, at if max_age else None)
        assert counted == 0 and bulk.n == one.n
        assert bulk.entries() == one.entries() and bulk.strata == one.strata
        assert counted == 1
        counted = 0
