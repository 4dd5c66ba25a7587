"""Tokens each run generated, from the ``gen throughput`` its Decode lines print (SGLang): what a
worse verdict's lost tokens are counted over (``detect.cost``'s arithmetic), in ``acceptmon runs``
and the agent's ``/api/verdict`` alike (the agent checkpoints it).

``gen throughput`` is over the time since the previous Decode line, so each line adds it times
that gap, within one run (a run's first line adds none), as the agent's cost meter counts.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from acceptmon.detect.cost import generated_steps
from acceptmon.detect.runstats import KEEP
from acceptmon.detect.series import seconds
from acceptmon.detect.verdict import Verdict
from acceptmon.model import DecodeSample, Record, Run
from acceptmon.runs import RunTracker
from acceptmon.runs.batch import DecodeBatch


class Generated:
    """A pipeline consumer: tokens generated per (source, run_id)."""

    def __init__(self, tracker: RunTracker) -> None:
        self._tracker = tracker
        self._last: dict[str, float] = {}  # source → time of its last Decode line this run
        self.tokens: dict[tuple[str, str], float] = {}

    def observe_run_start(self, run: Run) -> None:
        self._last.pop(run.source, None)
        mine = [k for k in self.tokens if k[0] == run.source]
        for key in mine[: max(0, len(mine) - KEEP)]:  # the runs the agent keeps numbers of
            del self.tokens[key]

    def observe(self, record: Record) -> None:
        if isinstance(record, DecodeSample):
            self._lines(record.meta.source, [seconds(record.meta.ts)], [record.gen_throughput])

    def observe_batch(self, batch: DecodeBatch) -> None:
        if batch.n:
            self._lines(batch.source, batch.epochs, batch.throughput)

    def _lines(self, source: str, times: list[float | None], rates: list[float]) -> None:
        run = self._tracker.current(source)
        if run is None or not rates:
            return
        steps, last = generated_steps(self._last.get(source), times, rates)
        key, total = (source, run.run_id), sum(tokens for _, tokens in steps)
        if last is not None:
            self._last[source] = last
        if total > 0:
            self.tokens[key] = self.tokens.get(key, 0.0) + total

    def checkpoint(self) -> dict[str, Any]:
        return {"tokens": [[s, r, v] for (s, r), v in self.tokens.items()], "last": dict(self._last)}

    def restore(self, data: Any) -> None:
        """Advisory (an estimate): anything unreadable starts afresh."""
        self.tokens, self._last = {}, {}
        try:
            for source, run_id, value in data["tokens"]:
                self.tokens[(str(source), str(run_id))] = float(value)
            self._last = {str(s): float(t) for s, t in data["last"].items()}
        except (KeyError, TypeError, ValueError, AttributeError):
            self.tokens, self._last = {}, {}


def costed(verdict: Verdict | None, generated: dict[tuple[str, str], float], source: str) -> Verdict | None:
    """``verdict`` with the tokens its latest run generated, when the log said them."""
    tokens = None if verdict is None else generated.get((source, verdict.run_id))
    if verdict is None or tokens is None:
        return verdict
    return replace(verdict, generated=tokens)
