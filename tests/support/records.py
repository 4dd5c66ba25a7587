"""A pipeline consumer that takes everything as records, for tests that look at each one."""

from __future__ import annotations

from collections.abc import Callable

from acceptmon.model import Record, Run
from acceptmon.runs.batch import DecodeBatch


class PerRecord:
    """A consumer that takes everything as records: each batch as its records (the bulk path's
    gain is lost for it; an exception ends its batch, counted once), and every Prefill record.
    Backfill was its last user outside tests (its sampler now steps inside batches)."""

    wants_prefill = True

    def __init__(self, take: Callable[[Record], object]) -> None:
        self._take = take

    def observe_run_start(self, run: Run) -> None:
        """Runs reach it through its records' sources (``RunTracker.current``)."""

    def observe(self, record: Record) -> None:
        self._take(record)

    def observe_batch(self, batch: DecodeBatch) -> None:
        for record in batch.records():
            self._take(record)
