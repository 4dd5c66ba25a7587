"""Where a batch's Decode and Prefill lines stand (backfill cuts and samples there): the
same whether the bulk path hands on the marks it searched (``_whole``) or the batch searches
its lines itself."""

from __future__ import annotations

from acceptmon.parse.sglang import DECODE, PREFILL
from acceptmon.runs.batch import DecodeBatch
from tests.unit.runs.test_batch_columns_shared import batches_of
from tests.unit.runs.test_batch_parts import LINE
from tests.unit.runs.test_batch_records import ARGS

PREFILL_LINE = (
    "[2026-11-30 00:{m:02d}:{s:02d}] Prefill batch, #new-seq: 1, #new-token: {t}, #cached-token: 0, "
    "token usage: 0.04, #running-req: 3, #queue-req: 0\n"
)


def _log(n: int = 8000) -> list[str]:
    """Long enough for chunks after the first (which holds the start), which go whole."""
    lines = [ARGS]
    for i in range(n):
        m, s = i // 60 % 60, i % 60
        lines.append(LINE.format(m=m, s=s, r=i % 23, a=1 + i % 9 / 4, t=100 + i, q=i % 3))
        if i % 3 == 0:
            lines.append(PREFILL_LINE.format(m=m, s=s, t=500 + i))
        if i % 5 == 0:
            lines.append(f'[2026-11-30 00:{m:02d}:{s:02d}] INFO: 127.0.0.1:{i} - "POST /generate" 200\n')
    return lines


def _check(batch: DecodeBatch) -> bool:
    """The batch's positions, from its marks and from its own search; whether it had marks."""
    lines = batch.lines
    decode = [i for i, t in enumerate(lines) if DECODE in t]
    prefill = [i for i, t in enumerate(lines) if PREFILL in t and DECODE not in t]
    assert batch.offsets() == decode
    assert batch.prefill_offsets(decode) == prefill
    marked = batch._marks is not None
    batch._marks = None  # the batch's own search
    assert batch.offsets() == decode
    assert batch.prefill_offsets(decode) == prefill
    return marked


def test_marks_from_the_bulk_path_give_the_positions_a_search_gives() -> None:
    assert sum(map(_check, batches_of(_log()))) >= 1
