"""A batch's rank column comes from the prefix cache without a time built per prefix
(``read_log``'s rank column), and equals the stamps' ranks in every zone."""

from __future__ import annotations

import io
from zoneinfo import ZoneInfo

import pytest

from acceptmon.ingest import Pipeline
from acceptmon.model import Record, Run
from acceptmon.runs.batch import DecodeBatch
from acceptmon.sources.chunks import read_chunks
from tests.unit.runs.test_batch_records import ARGS

LINE = (
    "[2026-11-30 00:{m:02d}:{s:02d}{rank}] Decode batch, #running-req: 3, #token: 9, token usage: 0.07, "
    "accept len: 2.50, accept rate: 0.58, cuda graph: True, gen throughput (token/s): 10.50, #queue-req: 0\n"
)
RANKS = ("", " TP0", " DP1 TP3", " TP1 EP2", " PP1")


def _log(n: int = 900) -> bytes:
    lines = [ARGS]
    lines += [LINE.format(m=i // 60 % 60, s=i % 60, rank=RANKS[i % len(RANKS)]) for i in range(n)]
    return "".join(lines).encode()


class _Compare:
    def __init__(self) -> None:
        self.lines = 0

    def observe_run_start(self, run: Run) -> None:
        pass

    def observe(self, record: Record) -> None:
        pass

    def observe_batch(self, batch: DecodeBatch) -> None:
        ranks = batch.ranks  # first, before anything built the stamps
        assert ranks == [r for _, r in batch.stamps]
        assert batch.ranks == ranks
        self.lines += batch.n


@pytest.mark.parametrize("zone", ["UTC", "Europe/Berlin"])
def test_ranks_equal_the_stamps_ranks(zone: str) -> None:
    pipeline = Pipeline(bulk=True, zone=lambda _source: ZoneInfo(zone))
    compare = _Compare()
    pipeline.consumers.append(compare)
    for chunk, _ in read_chunks("s", io.BytesIO(_log())):
        pipeline.feed(chunk)
    assert compare.lines > 800
