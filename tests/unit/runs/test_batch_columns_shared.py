"""A batch's accept-length column is converted once per distinct text, and the counts of those
texts serve the store's histogram and the detector's hundredths alike: each equal to what
converting value by value gives."""

from __future__ import annotations

import io
from bisect import bisect_left, bisect_right
from collections import Counter
from itertools import compress

from acceptmon.ingest import Pipeline
from acceptmon.model import Record, Run
from acceptmon.runs.batch import DecodeBatch, floats
from acceptmon.sources.chunks import read_chunks
from tests.unit.runs.test_batch_parts import EDGES, LINE
from tests.unit.runs.test_batch_records import ARGS


def test_floats_equal_value_by_value_however_often_values_repeat() -> None:
    repeated = ["2.50", "2.5", "1.00", "3.75", "nan", "1e3"] * 50
    distinct = [f"{i * 0.37:.2f}" for i in range(300)]
    half = distinct[:150] * 2
    for col in (repeated, distinct, half, distinct[:10] + repeated, [], ["1.5"]):
        got, want = floats(col), list(map(float, col))
        assert [repr(v) for v in got] == [repr(v) for v in want]


class _Batches:
    def __init__(self) -> None:
        self.batches: list[DecodeBatch] = []

    def observe_run_start(self, run: Run) -> None:
        pass

    def observe(self, record: Record) -> None:
        pass

    def observe_batch(self, batch: DecodeBatch) -> None:
        self.batches.append(batch)


def batches_of(lines: list[str]) -> list[DecodeBatch]:
    """The batches the bulk path makes of a log of ``lines`` (each with its newline)."""
    pipeline, seen = Pipeline(bulk=True), _Batches()
    pipeline.consumers.append(seen)
    for chunk, _ in read_chunks("s", io.BytesIO("".join(lines).encode())):
        pipeline.feed(chunk)
    assert seen.batches
    return seen.batches


def _batches() -> list[DecodeBatch]:
    return batches_of(
        [ARGS]
        + [
            LINE.format(m=i // 60 % 60, s=i % 60, r=i % 23, a=1 + i % 9 / 4, t=100 + i * 0.37, q=i % 3)
            for i in range(900)
        ]
    )


def test_single_values_and_picked_lines_equal_the_columns() -> None:
    """``queued(i)`` and ``throughput_where`` read a line or a few without building the column,
    and give what the column holds, before it is built and after."""
    for batch in _batches():
        picked = [i % 3 == 0 for i in range(batch.n)]
        queued = [batch.queued(i) for i in range(batch.n)]
        where = batch.throughput_where(picked)
        assert queued == batch.queue
        assert where == list(compress(batch.throughput, picked)) == batch.throughput_where(picked)
        offsets = batch.offsets()
        part = batch.part(1, batch.n // 2, offsets)
        assert part.throughput_where(picked[1 : batch.n // 2]) == list(
            compress(batch.throughput[1 : batch.n // 2], picked[1 : batch.n // 2])
        )


def test_len_counts_and_strata_equal_the_per_value_definitions() -> None:
    for batch in _batches():
        lens = batch.lens
        assert lens is not None
        counts = batch.len_counts()
        assert sum(counts.values()) == batch.n
        assert Counter({float(t): n for t, n in counts.items()}) == Counter(lens)
        buckets, centis = batch.strata(EDGES)
        assert buckets == [bisect_right(EDGES, r) for r in batch.running]
        assert centis == [round(v * 100) for v in lens]


def test_len_histogram_of_a_batch_and_of_its_parts() -> None:
    """The store's accept-length buckets: from the distinct texts for a batch, from the batch's
    bucket per line for a part; both what bisecting each line's length gives."""
    edges = (1.05, 1.5, 2.0, 2.75, 4.0)
    for batch in _batches():
        lens = batch.lens
        assert lens is not None
        assert batch.len_histogram(edges) == Counter(bisect_left(edges, v) for v in lens)
        offsets = batch.offsets()
        for i, j in ((0, 1), (1, batch.n // 2), (batch.n // 2, batch.n)):
            part = batch.part(i, j, offsets)
            assert part.len_histogram(edges) == Counter(bisect_left(edges, v) for v in lens[i:j])


def test_a_parts_repeat_counts_are_its_slice_of_its_batchs() -> None:
    lines = [ARGS]
    for i in range(600):
        line = LINE.format(m=i // 60 % 60, s=i % 60, r=i % 23, a=1 + i % 9 / 4, t=100 + i * 0.37, q=i % 3)
        lines.append(line[:-1] + " [repeated 3x across cluster]\n" if i % 7 == 0 else line)
    pipeline, seen = Pipeline(bulk=True), _Batches()
    pipeline.consumers.append(seen)
    for chunk, _ in read_chunks("s", io.BytesIO("".join(lines).encode())):
        pipeline.feed(chunk)
    assert any(3 in batch.repeated for batch in seen.batches)
    for batch in seen.batches:
        offsets = batch.offsets()
        for i, j in ((0, 1), (1, batch.n // 2), (batch.n // 2, batch.n)):
            alone = batch.part(i, j, offsets)
            alone._whole = None  # as a batch of its own lines
            assert batch.part(i, j, offsets).repeated == batch.repeated[i:j] == alone.repeated
