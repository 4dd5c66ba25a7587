"""Rotations joined out of order: log time that runs backwards where one file meets the next.

The files of a rotated set are read oldest first by their names (``sources.rotation``);
when the names mislead (copied files renamed by hand), the only evidence is the log's
own time going back at a join. That is warned about, since a verdict over a mis-joined
log compares the wrong runs.
"""

from __future__ import annotations

import logging
from datetime import datetime

from acceptmon.model import DecodeSample, Record, Run, SpecSample
from acceptmon.runs.batch import DecodeBatch
from acceptmon.text.printable import printable

log = logging.getLogger("acceptmon.runs")


class JoinClock:
    """A pipeline consumer that notes each file's first and last acceptance time."""

    def __init__(self) -> None:
        self._source = ""
        self._path = ""
        self._before: tuple[str, datetime] | None = None  # the previous file and its last time
        self._first: datetime | None = None
        self._last: datetime | None = None
        #: (earlier file, later file) pairs whose join went back in time.
        self.backwards: list[tuple[str, str]] = []

    def next_file(self, source: str, path: str) -> None:
        """The next file of ``source`` starts: compare its first time with the last file's last."""
        self._close()
        self._source, self._path, self._first = source, path, None

    def observe_run_start(self, run: Run) -> None:
        pass

    def observe(self, record: Record) -> None:
        if isinstance(record, DecodeSample | SpecSample):
            self._seen(record.meta.ts, record.meta.ts)

    def observe_batch(self, batch: DecodeBatch) -> None:
        if batch.n:
            self._seen(batch.stamp(0)[0], batch.stamp(batch.n - 1)[0])

    def _seen(self, first: datetime | None, last: datetime | None) -> None:
        if first is None or last is None:
            return
        if self._first is None:
            self._first = first
            self._check()
        self._last = last

    def _check(self) -> None:
        before, first = self._before, self._first
        if before is None or first is None or (before[1].tzinfo is None) != (first.tzinfo is None):
            return
        if first < before[1]:
            self.backwards.append((before[0], self._path))
            log.warning(
                "%s: log time runs backwards where %s meets %s (%s after %s): "
                "the rotations may be joined in the wrong order",
                printable(self._source),
                printable(before[0]),
                printable(self._path),
                first.isoformat(),
                before[1].isoformat(),
            )

    def _close(self) -> None:
        if self._last is not None:
            self._before = (self._path, self._last)
        self._last = None
