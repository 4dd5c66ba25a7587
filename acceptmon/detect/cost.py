"""What an acceptance drop costs: the share of decode throughput lost, and the tokens lost.

An estimate, on purpose simple: a verify step emits ``accept len`` tokens per request, so at
the same step time decode throughput moves with accept len, and a drop from ``before`` to
``after`` loses ``1 − after/before`` of it. The tokens lost are the tokens the server generated
while the drop lasted (``gen throughput`` × the time between Decode lines) times
``before/after − 1``: what it would have generated at the old acceptance, minus what it did.
It assumes the step time (draft and verify) did not change with the config, and that the
server would have had the work to use the extra throughput.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from itertools import accumulate, compress, repeat
from operator import add, and_, ge, gt, le, mul, sub
from typing import Any, cast

from acceptmon.detect.findings import DROP, without_secrets
from acceptmon.detect.series import seconds
from acceptmon.detect.stats import Z95
from acceptmon.model import DecodeSample, Finding, Record, Run
from acceptmon.runs.batch import DecodeBatch

#: Resolved drops whose tokens are remembered (for their RESOLVED messages and the API).
MAX_RESOLVED = 512


@dataclass(frozen=True, slots=True)
class Cost:
    """The throughput share lost (0-1) with its 95% interval, and the tokens lost so far."""

    fraction: float
    interval: tuple[float, float] | None
    tokens: float | None


def throughput_lost(
    before: float, after: float, before_ci: tuple[float, float] | None, after_ci: tuple[float, float] | None
) -> tuple[float, tuple[float, float] | None]:
    """``1 − after/before`` and its interval (delta method, as the verdict's relative change)."""
    ratio = after / before
    if before_ci is None or after_ci is None or after <= 0:
        return 1.0 - ratio, None
    sa, sb = (after_ci[1] - after_ci[0]) / (2 * Z95), (before_ci[1] - before_ci[0]) / (2 * Z95)
    half = Z95 * ratio * math.hypot(sa / after, sb / before)
    return 1.0 - ratio, (1.0 - ratio - half, 1.0 - ratio + half)


def tokens_lost(generated: float, fraction: float) -> float:
    """Tokens a server that generated ``generated`` would have added at the old acceptance."""
    return generated * fraction / (1.0 - fraction) if fraction < 1.0 else math.inf


def cost_of(f: Finding) -> Cost | None:
    """The cost of a drop finding; None for other rules or without both accept lengths."""
    before, after = f.before_accept_len, f.after_accept_len
    if f.rule != DROP or before is None or after is None or before <= 0 or after <= 0:
        return None
    # The intervals are of the finding's measure: of accept len only when that is it.
    same = f.measure == "accept_len"
    fraction, interval = throughput_lost(
        before, after, *((f.before_ci, f.after_ci) if same else (None, None))
    )
    if fraction <= 0:  # per-token acceptance fell, accept len did not: no loss this can see
        return None
    return Cost(fraction, interval, f.tokens_lost)


def cost_words(cost: Cost, span: str = "since first seen") -> str:
    """``costing ≈ 35% of decode throughput (95% interval 31% to 39%), ≈ 12,300 tokens since first seen``
    (``span``: over what the tokens were counted)."""
    text = f"costing ≈ {cost.fraction:.0%} of decode throughput"
    if cost.interval is not None:
        text += f" (95% interval {max(0.0, cost.interval[0]):.0%} to {min(1.0, cost.interval[1]):.0%})"
    if cost.tokens is not None and math.isfinite(cost.tokens) and cost.tokens >= 1:
        text += f", ≈ {_tokens(cost.tokens)} tokens {span}"
    return text


def verdict_cost_words(
    relative_change: float, interval: tuple[float, float] | None, generated: float | None = None
) -> str:
    """A worse verdict's cost: its accept-len change read as decode throughput lost, and with the
    tokens the run ``generated`` (known where the log says gen throughput) the tokens it lost."""
    fraction = -relative_change
    tokens = tokens_lost(generated, fraction) if generated and fraction > 0 else None
    cost = Cost(fraction, None if interval is None else (-interval[1], -interval[0]), tokens)
    return cost_words(cost, "over the run")


def generated_steps(
    last: float | None, times: Sequence[float | None], throughput: Sequence[float]
) -> tuple[list[tuple[float, float]], float | None]:
    """The tokens each Decode line says were generated, as (its time, tokens), and the time of
    the last line: ``gen throughput`` is over the time since the previous line (``last`` before
    these), so a line adds it times that gap; one in the same second, or without a time, adds none."""
    at, tokens, last = generated(last, times, throughput)
    return list(zip(at, tokens, strict=True)), last


def generated(
    last: float | None, times: Sequence[float | None], throughput: Sequence[float]
) -> tuple[list[float], list[float], float | None]:
    """``generated_steps`` as two columns (times, tokens), at C speed where every line has a time."""
    if len(times) != len(throughput):
        raise ValueError("a time and a gen throughput per line")
    if None in times or not times:
        at: list[float] = []
        tokens: list[float] = []
        for t, rate in zip(times, throughput, strict=True):
            if t is None:
                continue
            if last is not None and t > last:
                at.append(t)
                tokens.append(rate * (t - last))
            last = t
        return at, tokens, last
    up, at, gaps, last = advances(last, cast(Sequence[float], times))
    return at, list(map(mul, compress(throughput, up), gaps)), last


def advances(
    last: float | None, timed: Sequence[float]
) -> tuple[list[bool], list[float], list[float], float]:
    """For lines that all have a time (at least one): which of them count (each line's flag:
    later than the line before it), their times, the gaps they count, and the last time. Only
    the counted lines' throughputs are then read (a few lines share each second)."""
    prev = [math.inf if last is None else last, *timed[:-1]]  # a first line has no gap to count
    up = list(map(gt, timed, prev))
    at = list(compress(timed, up))
    return up, at, list(map(sub, at, compress(prev, up))), timed[-1]


def _sum(start: float, terms: list[float]) -> float:
    """``start`` plus each term in turn, as ``+=`` would (``sum`` of floats may round otherwise)."""
    *_, total = accumulate(terms, add, initial=start)
    return total


def _tokens(n: float) -> str:
    """``12,300``: three significant figures are all an estimate has."""
    if n < 1000:
        return f"{n:.0f}"
    digits = math.floor(math.log10(n)) - 2
    return f"{round(n, -digits):,.0f}"


@dataclass(slots=True)
class _Drop:
    """One drop finding as the meter counts it: from ``start`` to ``end`` (epoch seconds),
    while its config runs (``counting``), at ``factor`` = before/after − 1 lost per token."""

    source: str
    start: float
    end: float | None
    factor: float
    tokens: float = 0.0
    counting: bool = True


class CostMeter:
    """Tokens each drop cost while it lasted: a pipeline consumer (Decode lines, run starts)
    told of drop findings by ``note``. Pure: times come from the lines.

    A drop counts the lines of its source from its first sighting until it resolves, but only
    while the config that dropped runs: a later run that changes the config (a revert, a fix)
    stops it, a plain restart does not. Each line adds ``gen throughput`` × the time since the
    source's previous Decode line of the same run (SGLang prints the throughput over that
    time), so lines a source prints in the same second add nothing, and a run's first adds none.
    """

    def __init__(self) -> None:
        self._drops: dict[str, _Drop] = {}
        self._last: dict[str, float] = {}  # source → time of its last Decode line this run
        #: Tokens lost per (source, rule): what ``acceptmon_drop_tokens_lost_estimate_total`` shows.
        self.lost: dict[tuple[str, str], float] = {}

    def note(self, findings: Iterable[Finding]) -> None:
        """Drop findings as they fire or resolve (others are ignored)."""
        for f in findings:
            if f.rule != DROP:
                continue
            drop = self._drops.get(f.key)
            if drop is None:
                cost = cost_of(f)
                start = seconds(f.first_seen)
                if cost is None or start is None or not f.active:
                    continue
                drop = self._drops[f.key] = _Drop(f.source, start, None, tokens_lost(1.0, cost.fraction))
                if f.source in self._last:  # a source with Decode lines (vLLM's have none to count)
                    # The counter's series starts at 0 with the drop, so its first increase shows.
                    self.lost.setdefault((f.source, DROP), 0.0)
            if not f.active and drop.end is None:
                drop.end = seconds(f.resolved_at) or 0.0
                drop.counting = drop.counting and self._last.get(f.source, -math.inf) < drop.end
                self._forget()

    def fill(self, f: Finding) -> Finding:
        """The finding with the tokens its drop cost so far."""
        drop = self._drops.get(f.key)
        if drop is None or (drop.tokens == 0 and (f.source, DROP) not in self.lost):
            return f  # no Decode line to count from: unknown, not zero
        return replace(f, tokens_lost=round(drop.tokens))

    def observe_run_start(self, run: Run) -> None:
        self._last.pop(run.source, None)
        if without_secrets(run.diff):
            for drop in self._drops.values():
                if drop.source == run.source:
                    drop.counting = False

    def observe(self, record: Record) -> None:
        if isinstance(record, DecodeSample):
            at = seconds(record.meta.ts)
            if at is not None:
                self._lines(record.meta.source, [at], [record.gen_throughput])

    def observe_batch(self, batch: DecodeBatch) -> None:
        source = batch.source
        if any(d.source == source and d.counting for d in self._drops.values()):
            times = batch.epochs
            if not times or not (batch.times_in_order() or None not in times):
                self._lines(source, times, batch.throughput)
            else:
                up, at, gaps, newest = advances(self._last.get(source), cast(list[float], times))
                self._counted(source, at, list(map(mul, batch.throughput_where(up), gaps)), newest)
        else:
            last = batch.last_epoch()
            if last is not None:
                self._last[source] = last

    def _lines(self, source: str, times: list[float | None], throughput: list[float]) -> None:
        self._counted(source, *generated(self._last.get(source), times, throughput))

    def _counted(self, source: str, at: list[float], generated_: list[float], last: float | None) -> None:
        """The tokens generated at times ``at`` into the source's counting drops."""
        drops = [d for d in self._drops.values() if d.source == source and d.counting]
        if len(drops) == 1:  # the usual case: the sums as ``_add`` makes them, at C speed
            drop = drops[0]
            inside = map(le, repeat(drop.start), at)
            if drop.end is not None:
                inside = map(and_, inside, map(ge, repeat(drop.end), at))
            lost = list(map(mul, compress(generated_, inside), repeat(drop.factor)))
            if lost:
                key = (drop.source, DROP)
                drop.tokens = _sum(drop.tokens, lost)
                self.lost[key] = _sum(self.lost.get(key, 0.0), lost)
        else:
            for t, tokens in zip(at, generated_, strict=True):
                for d in drops:
                    if d.start <= t and (d.end is None or t <= d.end):
                        self._add(d, tokens * d.factor)
        if last is not None:
            self._last[source] = last
            for d in drops:
                d.counting = d.end is None or last < d.end

    def _add(self, drop: _Drop, tokens: float) -> None:
        drop.tokens += tokens
        key = (drop.source, DROP)
        self.lost[key] = self.lost.get(key, 0.0) + tokens

    def _forget(self) -> None:
        ended = [k for k, d in self._drops.items() if d.end is not None]
        for key in ended[: max(0, len(ended) - MAX_RESOLVED)]:
            del self._drops[key]

    def checkpoint(self) -> dict[str, Any]:
        drops = [
            [k, d.source, d.start, d.end, d.factor, d.tokens, d.counting] for k, d in self._drops.items()
        ]
        return {"drops": drops, "lost": [[s, r, v] for (s, r), v in self.lost.items()]}

    def restore(self, data: Any) -> None:
        """Advisory state (an estimate): anything unreadable starts the meter afresh."""
        self._drops, self.lost, self._last = {}, {}, {}
        try:
            for key, source, start, end, factor, tokens, counting in data["drops"]:
                self._drops[str(key)] = _Drop(
                    str(source),
                    float(start),
                    None if end is None else float(end),
                    float(factor),
                    float(tokens),
                    bool(counting),
                )
            for source, rule, value in data["lost"]:
                self.lost[(str(source), str(rule))] = float(value)
        except (KeyError, TypeError, ValueError):
            self._drops, self.lost = {}, {}
