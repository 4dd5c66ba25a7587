"""Lines read in bulk (commands reading logs to their end, the agent's loop) are read with
the youngest generation collected every ``YOUNG`` allocations; the threshold is restored after."""

from __future__ import annotations

import gc
from datetime import datetime
from pathlib import Path

from acceptmon.ingest import Pipeline
from acceptmon.ingest.garbage import YOUNG
from acceptmon.ingest.loop import Loop
from acceptmon.ingest.read import read_logs
from acceptmon.model import Chunk
from acceptmon.sources.files import Log
from acceptmon.testing.synth import decode_line, server_args_line
from tests.unit.ingest.test_loop import Scripted

T0 = datetime(2026, 1, 1)
LINES = (server_args_line(T0), decode_line(T0, 2.5))


class _Thresholds:
    """A consumer noting the youngest generation's threshold while it is fed."""

    def __init__(self) -> None:
        self.seen: list[int] = []

    def observe_run_start(self, run: object) -> None:
        self.seen.append(gc.get_threshold()[0])

    def observe(self, record: object) -> None: ...

    def observe_batch(self, batch: object) -> None: ...


def _pipeline() -> tuple[Pipeline, _Thresholds]:
    pipeline, spy = Pipeline(), _Thresholds()
    pipeline.consumers.append(spy)
    return pipeline, spy


def test_logs_read_to_their_end_collect_young_garbage_every_young_allocations(tmp_path: Path) -> None:
    log = tmp_path / "gpu.log"
    log.write_text("\n".join(LINES) + "\n")
    pipeline, spy = _pipeline()
    before = gc.get_threshold()
    assert read_logs(pipeline, [Log("gpu", (str(log),))]) == []
    assert spy.seen == [max(before[0], YOUNG)] and gc.get_threshold() == before


def test_the_live_loop_collects_young_garbage_every_young_allocations_while_it_steps() -> None:
    pipeline, spy = _pipeline()
    before = gc.get_threshold()
    assert Loop(pipeline).step({"gpu": Scripted("gpu", [Chunk("gpu", LINES, 1)])}) == len(LINES)
    assert spy.seen == [max(before[0], YOUNG)] and gc.get_threshold() == before
