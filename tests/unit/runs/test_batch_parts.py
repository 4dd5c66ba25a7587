"""A part of a batch (backfill cuts one at each sample time) has the columns its own lines give:
taken as slices of the batch's, built once for all its parts, not rebuilt per part."""

from __future__ import annotations

import io
from itertools import pairwise

from acceptmon.ingest import Pipeline
from acceptmon.model import Record, Run
from acceptmon.runs.batch import DecodeBatch
from acceptmon.sources.chunks import read_chunks
from tests.unit.runs.test_batch_records import ARGS

LINE = (
    "[2026-11-30 00:{m:02d}:{s:02d}] Decode batch, #running-req: {r}, #token: 9, token usage: 0.07, "
    "accept len: {a:.2f}, accept rate: 0.58, cuda graph: True, gen throughput (token/s): {t:.2f}, "
    "#queue-req: {q}\n"
)
EDGES = (1, 4, 16)


def _log(n: int = 600) -> bytes:
    lines = [ARGS]
    lines += [
        LINE.format(m=i // 60 % 60, s=i % 60, r=i % 23, a=1 + i % 9 / 4, t=100 + i * 0.37, q=i % 3)
        for i in range(n)
    ]
    return "".join(lines).encode()


def _columns(b: DecodeBatch) -> tuple[object, ...]:
    return (b.running, b.queue, b.throughput, b.lens, b.strata(EDGES), b.epochs, b.stamps)


class _Parts:
    def __init__(self) -> None:
        self.parts = 0

    def observe_run_start(self, run: Run) -> None:
        pass

    def observe(self, record: Record) -> None:
        pass

    def observe_batch(self, batch: DecodeBatch) -> None:
        cuts = [0, 1, batch.n // 3, batch.n // 3 + 1, batch.n - 1, batch.n]
        offsets = batch.offsets()
        for first in (True, False):  # the batch's columns built before its parts, or after
            if not first:
                _columns(batch)
            for i, j in pairwise(cuts):
                part = batch.part(i, j, offsets)
                alone = batch.part(i, j, offsets)
                alone._whole = None  # as a batch of its own lines
                assert _columns(part) == _columns(alone)
                buckets, centis = batch.strata(EDGES)
                assert part.running == batch.running[i:j] and part.queue == batch.queue[i:j]
                assert part.strata(EDGES) == (buckets[i:j], centis[i:j])
                self.parts += 1


def test_parts_have_their_own_lines_columns() -> None:
    pipeline = Pipeline(bulk=True)
    parts = _Parts()
    pipeline.consumers.append(parts)
    for chunk, _ in read_chunks("s", io.BytesIO(_log())):
        pipeline.feed(chunk)
    assert parts.parts >= 10
