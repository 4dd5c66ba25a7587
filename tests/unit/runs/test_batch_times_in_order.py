"""A batch knows once whether its lines' times are all there and in order: the detector then
takes the newest as the last and its windows skip their own scan, with the same state."""

from __future__ import annotations

from itertools import pairwise

from acceptmon.detect.series import Sliding
from acceptmon.runs.batch import DecodeBatch
from tests.unit.runs.test_batch_columns_shared import batches_of
from tests.unit.runs.test_batch_parts import LINE
from tests.unit.runs.test_batch_records import ARGS


def _batches(back: int | None) -> list[DecodeBatch]:
    """300 lines a second apart, the ``back``-th a minute earlier than its neighbours."""
    lines = [ARGS] + [
        LINE.format(m=(i // 60 - (i == back)) % 60, s=i % 60, r=i % 23, a=1 + i % 9 / 4, t=100.0, q=0)
        for i in range(300)
    ]
    return batches_of(lines)


def _in_order(epochs: list[float | None]) -> bool:
    timed = [e for e in epochs if e is not None]
    return len(timed) == len(epochs) and all(a <= b for a, b in pairwise(timed))


def test_times_in_order_is_the_scan_of_its_epochs() -> None:
    for back in (None, 150):
        for batch in _batches(back):
            assert batch.times_in_order() == _in_order(batch.epochs)
            part = batch.part(0, batch.n // 2, batch.offsets())
            assert part.times_in_order() == _in_order(part.epochs)
    assert not all(b.times_in_order() for b in _batches(150))


def test_a_window_told_the_order_holds_what_it_finds_itself() -> None:
    for back in (None, 150):
        for batch in _batches(back):
            told, found = Sliding(50, 30.0, 5), Sliding(50, 30.0, 5)
            n = batch.n
            buckets, values = [i % 3 for i in range(n)], [i % 7 for i in range(n)]
            told.extend(buckets, values, batch.epochs, batch.times_in_order())
            found.extend(buckets, values, batch.epochs)
            assert told.entries() == found.entries() and told.strata == found.strata
