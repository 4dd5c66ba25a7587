"""Tokens each run generated, from the ``gen throughput`` its Decode lines print (SGLang): what a
worse verdict's lost tokens are counted over (``detect.cost``'s arithmetic), in ``acceptmon runs``
and the agent's ``/api/verdict`` alike (the agent checkpoints it).

``gen throughput`` is over the time since the previous Decode line, so each line adds it times
that gap, within one run (a run's first line adds none), as the agent's cost meter counts.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from acceptmon.detect.cost import verdict_cost_words
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
        key, last, total = (source, run.run_id), self._last.get(source), 0.0
        for at, rate in zip(times, rates, strict=True):
            if at is None:
                continue
            if last is not None and at > last:
                total += rate * (at - last)
            last = at
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


@dataclass(frozen=True, slots=True)
class CostedVerdict(Verdict):
    """A verdict whose cost also says the tokens the latest run lost over its length."""

    generated: float | None = None

    def words(self) -> str:
        said = Verdict.words(self)
        if self.generated is None or self.relative_change is None:
            return said
        plain = verdict_cost_words(self.relative_change, self.interval)
        if not said.endswith(plain):  # no cost said (not worse, or compared by accept rate)
            return said
        return said.removesuffix(plain) + verdict_cost_words(
            self.relative_change, self.interval, self.generated
        )


def costed(verdict: Verdict | None, generated: dict[tuple[str, str], float], source: str) -> Verdict | None:
    """``verdict`` with the tokens its latest run generated, when the log said them."""
    tokens = None if verdict is None else generated.get((source, verdict.run_id))
    if verdict is None or tokens is None:
        return verdict
    return CostedVerdict(**{f.name: getattr(verdict, f.name) for f in fields(verdict)}, generated=tokens)
