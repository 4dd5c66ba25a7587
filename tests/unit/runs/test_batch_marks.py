"""Where a batch's Decode and Prefill lines stand (backfill cuts and samples there): the
same whether the bulk path hands on the marks it searched (``_whole``) or the batch searches
its lines itself."""

from __future__ import annotations

import io

from acceptmon.ingest import Pipeline
from acceptmon.model import Record, Run
from acceptmon.parse.sglang import DECODE, PREFILL
from acceptmon.runs.batch import DecodeBatch
from acceptmon.sources.chunks import read_chunks
from tests.unit.runs.test_batch_parts import LINE
from tests.unit.runs.test_batch_records import ARGS

PREFILL_LINE = (
    "[2026-11-30 00:{m:02d}:{s:02d}] Prefill batch, #new-seq: 1, #new-token: {t}, #cached-token: 0, "
    "token usage: 0.04, #running-req: 3, #queue-req: 0\n"
)


def _log(n: int = 8000) -> bytes:
    """Long enough for chunks after the first (which holds the start), which go whole."""
    lines = [ARGS]
    for i in range(n):
        m, s = i // 60 % 60, i % 60
        lines.append(LINE.format(m=m, s=s, r=i % 23, a=1 + i % 9 / 4, t=100 + i, q=i % 3))
        if i % 3 == 0:
            lines.append(PREFILL_LINE.format(m=m, s=s, t=500 + i))
        if i % 5 == 0:
            lines.append(f'[2026-11-30 00:{m:02d}:{s:02d}] INFO: 127.0.0.1:{i} - "POST /generate" 200\n')
    return "".join(lines).encode()


class _Positions:
    def __init__(self) -> None:
        self.marked = 0

    def observe_run_start(self, run: Run) -> None:
        pass

    def observe(self, record: Record) -> None:
        pass

    def observe_batch(self, batch: DecodeBatch) -> None:
        lines = batch.lines
        decode = [i for i, t in enumerate(lines) if DECODE in t]
        prefill = [i for i, t in enumerate(lines) if PREFILL in t and DECODE not in t]
        assert batch.offsets() == decode
        assert batch.prefill_offsets(decode) == prefill
        self.marked += batch._marks is not None
        batch._marks = None  # the batch's own search
        assert batch.offsets() == decode
        assert batch.prefill_offsets(decode) == prefill


def test_marks_from_the_bulk_path_give_the_positions_a_search_gives() -> None:
    pipeline = Pipeline(bulk=True)
    positions = _Positions()
    pipeline.consumers.append(positions)
    for chunk, _ in read_chunks("s", io.BytesIO(_log())):
        pipeline.feed(chunk)
    assert positions.marked >= 1
