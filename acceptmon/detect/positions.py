"""vLLM's per-position acceptance per run: which draft positions fell when acceptance dropped.

vLLM prints, per interval, the fraction of drafts whose token at each position
was accepted. Averaged per run (weighted by drafts), a drop finding can say
where it happened: a weight or draft-model change that breaks the draft shows
at position 0 already, a tokenizer or sampling change only further out.
Bounded: ``MAX_RUNS`` runs per source, ``MAX_POSITIONS`` positions each.
"""

from __future__ import annotations

from typing import Any

from acceptmon.model import SpecSample
from acceptmon.statefiles.strict import as_float, as_str

MAX_RUNS = 8
MAX_POSITIONS = 16
#: A position fell when its acceptance is at least this much lower, absolute and relative.
MIN_FALL = 0.05
MIN_FALL_RELATIVE = 0.10


class Positions:
    """Run id → (sums of weighted per-position ratios, sum of weights)."""

    __slots__ = ("_runs",)

    def __init__(self) -> None:
        self._runs: dict[str, tuple[list[float], float]] = {}

    def add(self, run_id: str, sample: SpecSample) -> None:
        ratios = sample.per_position[:MAX_POSITIONS]
        if not ratios:
            return
        drafted = sample.drafted_tokens
        weight = drafted / len(sample.per_position) if drafted else 1.0
        if drafted == 0 or weight <= 0:
            return
        sums, total = self._runs.pop(run_id, ([], 0.0))
        sums.extend([0.0] * (len(ratios) - len(sums)))
        for i, r in enumerate(ratios):
            sums[i] += weight * r
        self._runs[run_id] = (sums, total + weight)
        while len(self._runs) > MAX_RUNS:
            del self._runs[next(iter(self._runs))]

    def means(self, run_id: str) -> list[float] | None:
        entry = self._runs.get(run_id)
        if entry is None or entry[1] <= 0:
            return None
        sums, total = entry
        return [v / total for v in sums]

    def fell(self, before_id: str, after_id: str) -> list[tuple[int, float, float]]:
        """(position, before, after) of each position that fell between the two runs."""
        before, after = self.means(before_id), self.means(after_id)
        if before is None or after is None:
            return []
        return [
            (i, b, a)
            for i, (b, a) in enumerate(zip(before, after, strict=False))
            if b - a >= MIN_FALL and b - a >= MIN_FALL_RELATIVE * b
        ]

    def words(self, before_id: str, after_id: str) -> str:
        """``; per-position acceptance fell at positions 0, 1 (0.80 → 0.31, 0.62 → 0.12)``, or ""."""
        fell = self.fell(before_id, after_id)
        if not fell:
            return ""
        which = ", ".join(str(i) for i, _, _ in fell)
        levels = ", ".join(f"{b:.2f} → {a:.2f}" for _, b, a in fell)
        noun = "position" if len(fell) == 1 else "positions"
        return f"; per-position acceptance fell at {noun} {which} ({levels})"

    def dump(self) -> list[Any]:
        return [[run_id, sums, total] for run_id, (sums, total) in self._runs.items()]

    def load(self, data: Any) -> None:
        """Take back ``dump()`` output; anything odd leaves it empty (it only adds words)."""
        self._runs = {}
        try:
            for run_id, sums, total in data or []:
                self._runs[as_str(run_id)] = ([as_float(v) for v in sums][:MAX_POSITIONS], as_float(total))
        except (TypeError, ValueError):
            self._runs = {}
