"""A batch's jsonl lines written from its columns are byte for byte ``record_line`` of its
records, for every layout (constant and varying columns, extras, pools, repeat tails) and
for source names that hold JSON or ``%`` formatting syntax."""

from __future__ import annotations

import io

import pytest

from acceptmon.apps.oneshot import record_line
from acceptmon.ingest import Pipeline
from acceptmon.model import Record, Run
from acceptmon.runs.batch import DecodeBatch
from acceptmon.runs.batch_json import batch_jsonl
from acceptmon.sources.chunks import read_chunks
from tests.unit.runs.test_batch_records import DECODE, PREFILL, _log


class _Compare:
    """Checks each batch's column-written text against its records' ``record_line``."""

    def __init__(self, pipeline: Pipeline) -> None:
        self.pipeline = pipeline
        self.written = 0

    def observe_run_start(self, run: Run) -> None:
        pass

    def observe(self, record: Record) -> None:
        pass

    def observe_batch(self, batch: DecodeBatch) -> None:
        run = self.pipeline.tracker.current(batch.source)
        run_id = run.run_id if run is not None else None
        text = batch_jsonl(batch, run_id)
        if text is None:
            return
        assert text == "".join(record_line(r, run_id) + "\n" for r in batch.records())
        self.written += 1


def _check(name: str, data: bytes) -> int:
    pipeline = Pipeline(bulk=True)
    compare = _Compare(pipeline)
    pipeline.consumers.append(compare)
    for chunk, _ in read_chunks(name, io.BytesIO(data)):
        pipeline.feed(chunk)
    return compare.written


@pytest.mark.parametrize("decode", DECODE)
@pytest.mark.parametrize("prefill", PREFILL)
@pytest.mark.parametrize("repeat_tail", [False, True])
def test_column_lines_equal_record_lines(decode: str, prefill: str, repeat_tail: bool) -> None:
    _check("s", _log(decode, prefill, repeat_tail=repeat_tail))


@pytest.mark.parametrize("name", ['x}, {"kind": "decode"\n', "%s %d %% 100%", "caf\u00e9 \u2028 \\"])
def test_column_lines_with_hostile_source_names(name: str) -> None:
    assert _check(name, _log(DECODE[0], PREFILL[0])) > 0


def test_a_batch_of_one_line_and_constant_columns() -> None:
    """Every column constant (one line per batch): the template holds them all."""
    assert _check("s", _log(DECODE[0], PREFILL[1], n=3)) > 0
