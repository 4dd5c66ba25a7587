"""Per-source running totals, last values and a bounded window of samples.

Everything here is O(1) per record and bounded per source, so the agent's
memory stays flat however long it runs. Counters are plain numbers that are
saved with the checkpoint, so they continue across restarts.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field
from functools import reduce
from itertools import repeat
from operator import add, mul, sub
from typing import Any

from acceptmon.metrics.engine import ENGINES, SGLANG, VLLM, of_start
from acceptmon.model import (
    MALFORMED,
    PARSE_ERROR_KINDS,
    DecodeSample,
    PrefillSample,
    Ranks,
    Run,
    ServerStart,
    SpecConfig,
    SpecSample,
)
from acceptmon.parse.layouts import DecodeValues
from acceptmon.parse.prefix import epoch
from acceptmon.runs.batch import DecodeBatch
from acceptmon.runs.rate import accept_rate
from acceptmon.runs.sums import exact
from acceptmon.statefiles.strict import WrongShape, as_float, as_int, as_str

#: Upper bounds of the accept-length histogram (1.05 catches "speculation off").
ACCEPT_LEN_BUCKETS = (1.05, 1.25, 1.5, 1.75, 2.0, 2.25, 2.5, 2.75, 3.0, 3.5, 4.0, 5.0, 6.0, 8.0)

COUNTERS = (
    "lines",
    "parse_errors",
    "decode_batches",
    "prefill_batches",
    "spec_lines",
    "server_starts",
    "server_shutdowns",
    "server_crashes",
    "ray_lost_samples",
    "verify_rounds",
    "emitted_tokens",
    "accepted_tokens",
    "draft_tokens",
    "accept_len_sum",
    "accept_len_count",
)

GAUGES = (
    "accept_len",
    "accept_rate",
    "accept_rate_printed",
    "running_req",
    "queue_req",
    "token_usage",
    "gen_throughput",
    "last_decode_ts",
)


@dataclass
class SourceStats:
    """Everything the exporter shows about one source."""

    counters: dict[str, float] = field(default_factory=lambda: dict.fromkeys(COUNTERS, 0.0))
    buckets: list[int] = field(default_factory=lambda: [0] * len(ACCEPT_LEN_BUCKETS))
    gauges: dict[str, float | None] = field(default_factory=lambda: dict.fromkeys(GAUGES))
    run: Run | None = None
    #: vLLM v0 prints counts since start; remember the last to take deltas.
    v0_last: dict[str, tuple[int, int]] = field(default_factory=dict)
    #: ``counters["parse_errors"]`` split by kind (model.PARSE_ERROR_KINDS).
    error_kinds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(PARSE_ERROR_KINDS, 0.0))
    #: DP attention: each DP rank's last Decode values (running, queue, throughput, usage,
    #: accept len, accept rate); the gauges aggregate them. Rebuilt from the log, not saved.
    dp: dict[int, DpValues] = field(default_factory=dict)
    dp_ts: dict[int, float | None] = field(default_factory=dict)
    #: No DP rank's time in ``dp_ts`` is older than this (None: none has a time).
    dp_oldest: float | None = None
    #: The inference server writing the log (``sglang``, ``vllm``, ``llamacpp``, ``lmdeploy``):
    #: the ``engine`` label, from its latest start or acceptance line, or before one from the
    #: first line only that engine prints (``metrics/engine.py``); empty until then.
    engine: str = ""
    #: vLLM's per-position acceptance of the last interval that printed it (at most MAX_POSITIONS).
    positions: list[float] = field(default_factory=list)
    #: When the store first saw the source (0, 1, 2, ...; checkpointed): the series budget
    #: exports the first sources seen (``metrics/budget.py``), the same ones after a restart.
    seen: int = 0

    def count_error(self, kind: str, n: int = 1) -> None:
        self.counters["parse_errors"] += n
        self.error_kinds[kind if kind in self.error_kinds else MALFORMED] += n

    def to_dict(self) -> dict[str, Any]:
        return {
            "error_kinds": self.error_kinds,
            "counters": self.counters,
            "buckets": self.buckets,
            "gauges": self.gauges,
            "v0_last": self.v0_last,
            "engine": self.engine,
            "positions": self.positions,
            "seen": self.seen,
        }

    @classmethod
    def from_dict(cls, raw: Any, where: str = "stats") -> SourceStats:
        """``to_dict`` output, every value checked (``WrongShape`` naming the first wrong one):
        counters are restored whole or not at all, as the positions they go with."""
        data = _obj(raw, where)
        stats = cls()
        for key in ("counters", "buckets", "gauges"):
            if key not in data:
                raise WrongShape(where, f"missing {key}")
        stats.counters.update(_amounts(data["counters"], COUNTERS, f"{where}.counters"))
        saved = data["buckets"]
        if not isinstance(saved, list) or len(saved) != len(ACCEPT_LEN_BUCKETS):
            raise WrongShape(f"{where}.buckets", f"not {len(ACCEPT_LEN_BUCKETS)} buckets")
        stats.buckets = [as_int(v, f"{where}.buckets[{i}]", low=0) for i, v in enumerate(saved)]
        for k, v in _obj(data["gauges"], f"{where}.gauges").items():
            _known(k, GAUGES, f"{where}.gauges")
            stats.gauges[k] = None if v is None else as_float(v, f"{where}.gauges.{k}")
        for k, v in _obj(data.get("v0_last") or {}, f"{where}.v0_last").items():
            if not isinstance(v, list) or len(v) != 2:
                raise WrongShape(f"{where}.v0_last", "not a pair")
            stats.v0_last[k] = (
                as_int(v[0], f"{where}.v0_last", low=0),
                as_int(v[1], f"{where}.v0_last", low=0),
            )
        engine = as_str(data.get("engine", ""), f"{where}.engine")
        stats.engine = engine if engine in ENGINES else ""
        positions = data.get("positions") or []
        if not isinstance(positions, list):
            raise WrongShape(f"{where}.positions", "not a list")
        stats.positions = [_amount(v, f"{where}.positions") for v in positions][:MAX_POSITIONS]
        stats.seen = as_int(data.get("seen", 0), f"{where}.seen", low=0)
        kinds = _amounts(data.get("error_kinds") or {}, PARSE_ERROR_KINDS, f"{where}.error_kinds")
        stats.error_kinds.update(kinds)
        # Checkpoints from before the split: the unattributed rest was malformed lines.
        rest = stats.counters["parse_errors"] - sum(stats.error_kinds.values())
        if rest > 0:
            stats.error_kinds[MALFORMED] += rest
        return stats


def _obj(raw: Any, where: str) -> dict[str, Any]:
    if not isinstance(raw, dict) or not all(isinstance(k, str) for k in raw):
        raise WrongShape(where, "not an object")
    return raw


def _known(key: str, known: tuple[str, ...], where: str) -> None:
    if key not in known:
        raise WrongShape(where, f"unknown key {key[:40]!r}")


def _amount(raw: Any, where: str) -> float:
    """A count or sum: finite and not negative (it may pass 2^62: hostile lines can claim that much)."""
    value = as_float(raw, where)
    if value < 0:
        raise WrongShape(where, "below 0")
    return value


def _amounts(raw: Any, known: tuple[str, ...], where: str) -> dict[str, float]:
    out = {}
    for k, v in _obj(raw, where).items():
        _known(k, known, where)
        out[k] = _amount(v, f"{where}.{k}")
    return out


#: Draft positions exported per source (vLLM prints 3, 5 or 15; the label set stays bounded).
MAX_POSITIONS = 16
#: DP ranks remembered per source for the aggregate gauges (the label set stays bounded).
MAX_DP_RANKS = 256
#: A DP rank whose last Decode line is this much older (log time) than the newest is idle.
DP_STALE_S = 120.0
#: running, queue, throughput, usage, accept len, accept rate of one DP rank's last line.
DpValues = tuple[int, int, float, "float | None", "float | None", "float | None"]


def accept_len_range(settings: SpecConfig) -> tuple[float, float] | None:
    """Physically possible accept lengths for a run: 1 (nothing accepted) to draft
    tokens + 1 (all accepted, bonus included), with room for ``:.2f`` rounding.
    None when the run's draft settings are unknown."""
    slots = settings.slots
    if slots is None:
        return None
    return 0.995, slots + 1.005


def _dp_update(s: SourceStats, rank: int, values: DpValues, ts: float | None) -> None:
    """One DP rank's latest values, in O(1) amortised whatever the number of ranks: at most
    ``MAX_DP_RANKS`` are kept (the least recently seen goes first), and a rank silent for
    ``DP_STALE_S`` of log time (idle: SGLang logs only busy ranks) drops out. The ranks are
    looked through for stale ones only when ``s.dp_oldest`` (a lower bound of their times)
    says one may be, not on every line: with hundreds of ranks that scan was most of the cost."""
    s.dp.pop(rank, None)
    s.dp[rank] = values
    s.dp_ts[rank] = ts
    if ts is not None and (s.dp_oldest is None or ts < s.dp_oldest):
        s.dp_oldest = ts
    while len(s.dp) > MAX_DP_RANKS:
        s.dp_ts.pop(old := next(iter(s.dp)), None)
        s.dp.pop(old)
    if ts is not None and s.dp_oldest is not None and s.dp_oldest < ts - DP_STALE_S:
        for stale in [r for r, t in s.dp_ts.items() if t is not None and t < ts - DP_STALE_S]:
            s.dp.pop(stale, None)
            s.dp_ts.pop(stale, None)
        s.dp_oldest = min((t for t in s.dp_ts.values() if t is not None), default=None)


def _dp_aggregate(s: SourceStats) -> None:
    """With two or more DP ranks the gauges are the whole server's: requests, queue and
    throughput summed, accept len and rate weighted by #running-req (once per batch)."""
    if len(s.dp) < 2:
        return
    rows = list(s.dp.values())
    g = s.gauges
    running = sum(r[0] for r in rows)
    g["running_req"] = running
    g["queue_req"] = sum(r[1] for r in rows)
    g["gen_throughput"] = sum(r[2] for r in rows)
    usages = [r[3] for r in rows if r[3] is not None]
    g["token_usage"] = sum(usages) / len(usages) if usages else None
    for slot, key in ((4, "accept_len"), (5, "accept_rate")):
        have: list[tuple[float, int]] = [(float(v), r[0]) for r in rows if (v := r[slot]) is not None]
        weight = sum(n for _, n in have)
        if have:
            g[key] = sum(v * n for v, n in have) / weight if weight else sum(v for v, _ in have) / len(have)


def _dp_gauges(s: SourceStats, rank: int, values: DpValues, ts: float | None) -> None:
    """One DP rank's latest values into the aggregate gauges (the per-record path)."""
    _dp_update(s, rank, values, ts)
    _dp_aggregate(s)


def _dp_rank(ranks: Ranks) -> int | None:
    return next((v for k, v in ranks if k == "dp"), None)


def _observe_len(s: SourceStats, accept_len: float) -> None:
    s.gauges["accept_len"] = accept_len
    s.counters["accept_len_sum"] += accept_len
    s.counters["accept_len_count"] += 1
    i = bisect_left(ACCEPT_LEN_BUCKETS, accept_len)
    if i < len(ACCEPT_LEN_BUCKETS):
        s.buckets[i] += 1  # above the last bound only +Inf (the count) holds it


class Store:
    """Aggregates records into ``SourceStats``, one per source."""

    def __init__(self) -> None:
        self.sources: dict[str, SourceStats] = {}
        #: The host each source's log is on (the ``host`` label); empty when not known (oneshot).
        self.hosts: dict[str, str] = {}
        #: ``seen`` of the next new source; ``sources`` is kept in ``seen`` order.
        self._seen = 0

    def stats(self, source: str) -> SourceStats:
        s = self.sources.get(source)
        if s is None:
            s = self.sources[source] = SourceStats(seen=self._seen)
            self._seen += 1
        return s

    def decode(self, sample: DecodeSample, settings: SpecConfig) -> None:
        values = (
            sample.running_req,
            sample.queue_req,
            sample.gen_throughput,
            sample.token_usage,
            sample.accept_len,
            sample.accept_rate_printed,
            sample.repeated,
        )
        s = self.stats(sample.meta.source)
        self.decode_values(s, settings, values, epoch(sample.meta.ts))
        rank = _dp_rank(sample.meta.ranks)
        if rank is not None:
            rate = accept_rate(sample.accept_len, settings.slots) if sample.accept_len is not None else None
            values6 = (values[0], values[1], values[2], values[3], values[4], rate)
            _dp_gauges(s, rank, values6, epoch(sample.meta.ts))

    def decode_values(self, s: SourceStats, settings: SpecConfig, v: DecodeValues, ts: float | None) -> None:
        """The one place Decode arithmetic happens (records and the fast path both land here)."""
        running, queue, throughput, usage, al, printed, repeated = v
        c, g = s.counters, s.gauges
        s.engine = SGLANG
        c["decode_batches"] += 1
        if repeated > 1:
            c["ray_lost_samples"] += repeated - 1
        g["running_req"] = running
        g["queue_req"] = queue
        g["gen_throughput"] = throughput
        g["token_usage"] = usage
        if ts is not None:
            g["last_decode_ts"] = ts
        if al is None:
            return
        slots = settings.slots
        g["accept_rate"] = accept_rate(al, slots)
        g["accept_rate_printed"] = printed
        _observe_len(s, al)
        # SGLang sums over one log interval: forward_ct ≈ interval × #running-req.
        rounds = float(settings.decode_log_interval * running)
        c["verify_rounds"] += rounds
        c["emitted_tokens"] += rounds * al
        if slots is not None:
            c["accepted_tokens"] += rounds * max(0.0, al - 1.0)
            c["draft_tokens"] += rounds * slots

    def decode_batch(self, batch: DecodeBatch) -> None:
        """``decode_values`` for a whole batch, with the very same float operations.

        Sums are folded left to right from the running total (``reduce``), as the
        per-line path adds them, so both paths give bit-identical output.
        """
        s, settings = self.stats(batch.source), batch.spec
        if batch.n == 1:  # a live line: the record arithmetic is the shorter way (and the same)
            self.decode_values(s, settings, batch.values(0), batch.last_epoch())
            self._dp_batch(s, batch)
            return
        c, g = s.counters, s.gauges
        s.engine = SGLANG
        c["decode_batches"] += batch.n
        reps = batch.repeated
        if any(reps):
            lost = (n - 1 for n in reps if n > 1)
            c["ray_lost_samples"] = reduce(add, lost, c["ray_lost_samples"])
        running = batch.running
        g["running_req"] = running[-1]
        g["queue_req"] = int(batch.last(1))
        g["gen_throughput"] = float(batch.last(2))
        usage = batch.last(3)
        g["token_usage"] = float(usage) if usage is not None else None
        last_ts = batch.last_epoch()
        if last_ts is not None:
            g["last_decode_ts"] = last_ts
        lens = batch.lens
        if lens is None:
            return
        printed = batch.last(5)
        g["accept_len"] = lens[-1]
        g["accept_rate"] = batch.rate(lens[-1])
        g["accept_rate_printed"] = float(printed) if printed is not None else None
        c["accept_len_sum"] = reduce(add, lens, c["accept_len_sum"])
        c["accept_len_count"] += len(lens)
        for i, n in batch.len_histogram(ACCEPT_LEN_BUCKETS).items():
            if i < len(ACCEPT_LEN_BUCKETS):
                s.buckets[i] += n
        _batch_tokens(c, settings, running, lens)
        self._dp_batch(s, batch)

    def _dp_batch(self, s: SourceStats, batch: DecodeBatch) -> None:
        """Each DP rank's last line of the batch into the aggregate gauges (DP attention logs only)."""
        if _dp_rank(batch.stamp(batch.n - 1)[1]) is None and _dp_rank(batch.stamp(0)[1]) is None:
            return
        last: dict[int, int] = {}
        for i, (_ts, ranks) in enumerate(batch.stamps):
            rank = _dp_rank(ranks)
            if rank is not None:
                last.pop(rank, None)
                last[rank] = i
        stamps = batch.stamps
        # Only the ranks seen last can stay (MAX_DP_RANKS): a stretch naming thousands costs no more.
        for rank, i in list(last.items())[-MAX_DP_RANKS:]:
            v = batch.values(i)
            _dp_update(s, rank, (v[0], v[1], v[2], v[3], v[4], batch.rate(v[4])), epoch(stamps[i][0]))
        _dp_aggregate(s)

    def spec(self, sample: SpecSample) -> None:
        s = self.stats(sample.meta.source)
        c, g = s.counters, s.gauges
        s.engine = sample.engine_name if sample.engine_name in ENGINES else VLLM
        c["spec_lines"] += 1
        g["accept_rate"] = sample.accept_rate
        if sample.per_position:
            s.positions = list(sample.per_position[:MAX_POSITIONS])
        ts = epoch(sample.meta.ts)
        if ts is not None:
            g["last_decode_ts"] = ts
        if sample.accept_len is not None:
            _observe_len(s, sample.accept_len)
        accepted, drafted = sample.accepted_tokens, sample.drafted_tokens
        if accepted is None or drafted is None:
            return
        if sample.cumulative:
            key = str(sample.engine or 0)
            last_a, last_d = s.v0_last.get(key, (0, 0))
            s.v0_last[key] = (accepted, drafted)
            if accepted >= last_a and drafted >= last_d:  # else the server restarted
                accepted, drafted = accepted - last_a, drafted - last_d
        c["accepted_tokens"] += accepted
        c["draft_tokens"] += drafted
        k = sample.num_spec_tokens
        if k:
            rounds = drafted / k
            c["verify_rounds"] += rounds
            c["emitted_tokens"] += accepted + rounds

    def prefill(self, sample: PrefillSample) -> None:
        s = self.stats(sample.meta.source)
        s.engine = SGLANG
        s.counters["prefill_batches"] += 1

    def start(self, start: ServerStart) -> None:
        """A start line: counted, and the engine its arguments name."""
        s = self.stats(start.meta.source)
        s.counters["server_starts"] += 1
        s.engine = of_start(start.args) or s.engine

    def checkpoint(self) -> dict[str, Any]:
        return {name: s.to_dict() for name, s in self.sources.items()}

    def restore(self, data: Any) -> None:
        """Restore in the order the sources were first seen (checkpoints sort their keys;
        those written before ``seen`` restore in name order). A wrong value anywhere raises
        ``WrongShape`` with nothing restored."""
        restored = {
            name: SourceStats.from_dict(saved, f"store.{name}") for name, saved in _obj(data, "store").items()
        }
        for name, s in sorted(restored.items(), key=lambda item: (item[1].seen, item[0])):
            self.sources[name] = s
        self._seen = max((s.seen + 1 for s in self.sources.values()), default=self._seen)


def _batch_tokens(c: dict[str, float], settings: SpecConfig, running: list[int], lens: list[float]) -> None:
    """A batch's request-rounds and tokens, added as ``Store.decode_values`` adds them line by line."""
    slots = settings.slots
    interval = settings.decode_log_interval
    per = {r: float(interval * r) for r in set(running)}  # a batch holds few loads
    rounds = list(map(per.__getitem__, running))
    total = interval * sum(running)
    # Whole request-rounds and draft tokens: when every partial sum is an exact integer,
    # the line-by-line float additions are exact, and one addition gives the same number.
    whole = exact(c["verify_rounds"], total) and (slots is None or exact(c["draft_tokens"], total * slots))
    if whole:
        c["verify_rounds"] = float(int(c["verify_rounds"]) + total)
    else:
        c["verify_rounds"] = reduce(add, rounds, c["verify_rounds"])
    c["emitted_tokens"] = reduce(add, map(mul, rounds, lens), c["emitted_tokens"])
    if slots is not None:
        # max(0, len - 1) is len - 1 itself (the same float) for every length of 1 or more.
        gained = map(sub, lens, repeat(1.0))
        if min(lens) < 1.0:
            gained = map(max, repeat(0.0), gained)
        c["accepted_tokens"] = reduce(add, map(mul, rounds, gained), c["accepted_tokens"])
        if whole:
            c["draft_tokens"] = float(int(c["draft_tokens"]) + total * slots)
        else:
            c["draft_tokens"] = reduce(add, map(mul, rounds, repeat(slots)), c["draft_tokens"])
