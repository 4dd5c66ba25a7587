"""The run table (``acceptmon runs``, the report, the agent's verdict) holds the same numbers,
to the bit, whether Decode lines reach it by batch (the bulk path) or record by record."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from acceptmon.detect.runstats import RunTable
from acceptmon.ingest import Pipeline
from acceptmon.sources.chunks import read_chunks
from tests.unit.parse.test_fast_path_parity import INPUTS


def _table(data: bytes, bulk: bool) -> str:
    pipeline = Pipeline(bulk=bulk)
    table = RunTable(pipeline.tracker)
    pipeline.consumers.append(table)
    for chunk, _ in read_chunks("s", io.BytesIO(data)):
        pipeline.feed(chunk)
    # Floats as repr (json's): the sums must be the very same floats.
    return json.dumps(table.checkpoint(), sort_keys=True)


@pytest.mark.parametrize("path", INPUTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_run_table_agrees_on_both_paths(path: Path) -> None:
    data = path.read_bytes()
    assert _table(data, bulk=True) == _table(data, bulk=False)


def test_run_table_agrees_on_generated_traffic_with_idle_intervals(tmp_path: Path) -> None:
    """Idle intervals (``#running-req: 0``) weigh 1, and long sums stay bit-identical."""
    from bench.gen_log import generate

    log = tmp_path / "g.log"
    generate(str(log), 30_000, seed=11)
    data = log.read_bytes().replace(b"#running-req: 1,", b"#running-req: 0,", 300)
    bulk, lines = _table(data, bulk=True), _table(data, bulk=False)
    assert bulk == lines
    assert '"tokens": 0.0' not in bulk
