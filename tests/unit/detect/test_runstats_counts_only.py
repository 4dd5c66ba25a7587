"""Counts-only runs (llama.cpp's old line) keep their rate verdict across an agent restart."""

from __future__ import annotations

import json
from pathlib import Path

from acceptmon.detect.runstats import RunTable
from acceptmon.ingest.read import new_pipeline
from acceptmon.model import Chunk

LOG = Path(__file__).resolve().parents[2] / "data" / "llamacpp" / "old-rate-restart.log"


def test_checkpoint_keeps_the_rate_verdict_and_what_was_inferred() -> None:
    from datetime import UTC

    pipeline, table = new_pipeline(UTC)
    pipeline.feed(Chunk("s", tuple(LOG.read_text().splitlines()), 1))
    before = table.verdict("s")
    assert before is not None and before.state == "worse" and before.measure == "accept rate"
    restored = RunTable(pipeline.tracker)
    restored.restore(json.loads(json.dumps(table.checkpoint())))
    assert restored.verdict("s") == before
    assert [s.settings() for s in restored.of("s")] == [s.settings() for s in table.of("s")]


def test_an_older_checkpoint_without_the_new_keys_still_restores() -> None:
    from datetime import UTC

    pipeline, table = new_pipeline(UTC)
    pipeline.feed(Chunk("s", tuple(LOG.read_text().splitlines()), 1))
    saved = table.checkpoint()
    for runs in saved.values():
        for raw in runs.values():
            del raw["rate_strata"], raw["counted"], raw["positions"]
    restored = RunTable(pipeline.tracker)
    restored.restore(saved)
    assert [s.run.run_id for s in restored.of("s")] == ["r1", "r2"] and restored.verdict("s") is None
