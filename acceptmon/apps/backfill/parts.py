"""History written in parts by time, so that promtool makes blocks while the logs are read.

Each part is a whole OpenMetrics document (each family's TYPE and HELP, ``# EOF``) of the
samples recorded since the part before: a counter's value is its total, so a part needs
nothing of another. A part is cut once it holds ``PART_POINTS`` points, before the
first sample at an instant after every one recorded (``Recorder.cut_every``): one log's
parts share no instant, and their blocks do not overlap. Logs read one after another over
the same days make blocks that overlap in time (other series), which Prometheus merges, as
it merges history with what it already holds (vertical compaction, on since 2.39).

History of one part (a short log, or no promtool to hand parts to) is ``DIR/acceptmon.om``,
as ever; longer history is ``DIR/acceptmon-0001.om``, ``-0002`` … in time order.
"""

from __future__ import annotations

from pathlib import Path

from acceptmon.apps.backfill.blocks import Blocks
from acceptmon.apps.backfill.openmetrics import Recorder
from acceptmon.text.printable import printable

#: Points of a part (~7 MB): promtool on the last one, after the reading, takes up to a
#: quarter of a second (a tenth on average); each part costs promtool ~40 ms more, on the
#: cores the reading and its scout share with it. On the 1M-line bench log (~78k points),
#: parts of 1 << 15 took backfill 0.04 s less than 1 << 14 in 4 rounds of 4, and 1 << 16
#: no less; the longer the history, the more larger parts save.
PART_POINTS = 1 << 15
#: The one part's name, and the numbered parts' (their number is formatted in).
WHOLE, NUMBERED = "acceptmon.om", "acceptmon-{:04d}.om"


class WriteError(Exception):
    """A part could not be written (raised by ``finish``: the pipeline contains what a log's
    reading raises, so a part cut while reading keeps its error until then)."""


class Parts:
    """Writes a recorder's parts into ``directory``, each handed to ``blocks`` (if any)."""

    def __init__(self, directory: Path, blocks: Blocks | None) -> None:
        self._directory, self._blocks = directory, blocks
        self._recorder = Recorder()  # an empty history until ``attach``
        #: The parts written, in time order.
        self.written: list[Path] = []
        self._failed: str | None = None

    def attach(self, recorder: Recorder) -> None:
        """Write ``recorder``'s history: in parts while it records when there is promtool to
        hand them to, else in one part (``finish``)."""
        self._recorder = recorder
        if self._blocks is not None:
            recorder.cut_every(PART_POINTS, self._cut)

    def _cut(self) -> None:
        if self._failed is None:  # after a failure, the rest stays recorded for ``finish`` to report
            self._failed = self._write(NUMBERED.format(len(self.written) + 1))

    def finish(self) -> list[Path]:
        """Write the last part (the only one, unless some were cut); every part written."""
        if self._blocks is not None:
            self._blocks.reading = False
        if self._failed is None:
            self._failed = self._write(NUMBERED.format(len(self.written) + 1) if self.written else WHOLE)
        if self._failed is not None:
            raise WriteError(self._failed)
        return self.written

    def _write(self, name: str) -> str | None:
        """Write the recorder's part as ``name``, hand it to promtool; why not, or None."""
        path = self._directory / name
        try:
            if not self.written:
                self._directory.mkdir(parents=True, exist_ok=True)
                for stale in [self._directory / WHOLE, *self._directory.glob("acceptmon-[0-9]*.om")]:
                    stale.unlink(missing_ok=True)  # a former run's parts are not this history
            with path.open("w", encoding="utf-8") as f:
                self._recorder.write(f)
        except OSError as exc:
            return f"cannot write {printable(str(path))}: {exc.strerror or exc}"
        self.written.append(path)
        empty = self._recorder.part == 0
        self._recorder.clear()
        if self._blocks is not None and not empty:
            self._blocks.add(path)
        return None
