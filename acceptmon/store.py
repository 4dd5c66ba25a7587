"""Per-source running totals, last values and a bounded window of samples.

Everything here is O(1) per record and bounded per source, so the agent's
memory stays flat however long it runs. Counters are plain numbers that are
saved with the checkpoint, so they continue across restarts.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from acceptmon.model import DecodeSample, PrefillSample, Run, SpecSample, SpecSettings

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
    recent: deque[tuple[float, float, int]] = field(default_factory=lambda: deque(maxlen=4096))

    def to_dict(self) -> dict[str, Any]:
        return {
            "counters": self.counters,
            "buckets": self.buckets,
            "gauges": self.gauges,
            "v0_last": self.v0_last,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SourceStats:
        stats = cls()
        stats.counters.update({k: float(v) for k, v in data.get("counters", {}).items() if k in COUNTERS})
        saved = data.get("buckets", [])
        if len(saved) == len(ACCEPT_LEN_BUCKETS):
            stats.buckets = [int(v) for v in saved]
        stats.gauges.update({k: v for k, v in data.get("gauges", {}).items() if k in GAUGES})
        stats.v0_last = {k: (int(v[0]), int(v[1])) for k, v in data.get("v0_last", {}).items()}
        return stats


def _epoch(ts: datetime | None) -> float | None:
    """Log timestamps carry no zone; they are read as UTC so output is reproducible."""
    return ts.replace(tzinfo=UTC).timestamp() if ts is not None else None


def _observe_len(s: SourceStats, accept_len: float, ts: float | None, running: int) -> None:
    s.gauges["accept_len"] = accept_len
    s.counters["accept_len_sum"] += accept_len
    s.counters["accept_len_count"] += 1
    for i, bound in enumerate(ACCEPT_LEN_BUCKETS):
        if accept_len <= bound:
            s.buckets[i] += 1
            break
    s.recent.append((ts or 0.0, accept_len, running))


class Store:
    """Aggregates records into ``SourceStats``, one per source."""

    def __init__(self) -> None:
        self.sources: dict[str, SourceStats] = {}

    def stats(self, source: str) -> SourceStats:
        s = self.sources.get(source)
        if s is None:
            s = self.sources[source] = SourceStats()
        return s

    def decode(self, sample: DecodeSample, settings: SpecSettings) -> None:
        s = self.stats(sample.meta.source)
        c, g = s.counters, s.gauges
        c["decode_batches"] += 1
        if sample.repeated > 1:
            c["ray_lost_samples"] += sample.repeated - 1
        g["running_req"] = sample.running_req
        g["queue_req"] = sample.queue_req
        g["gen_throughput"] = sample.gen_throughput
        g["token_usage"] = sample.token_usage
        ts = _epoch(sample.meta.ts)
        if ts is not None:
            g["last_decode_ts"] = ts
        al = sample.accept_len
        if al is None:
            return
        g["accept_rate"] = sample.accept_rate
        g["accept_rate_printed"] = sample.accept_rate_printed
        _observe_len(s, al, ts, sample.running_req)
        # SGLang sums over one log interval: forward_ct ≈ interval × #running-req.
        rounds = float(settings.decode_log_interval * sample.running_req)
        c["verify_rounds"] += rounds
        c["emitted_tokens"] += rounds * al
        slots = settings.draft_slots()
        if slots is not None:
            c["accepted_tokens"] += rounds * max(0.0, al - 1.0)
            c["draft_tokens"] += rounds * slots

    def spec(self, sample: SpecSample) -> None:
        s = self.stats(sample.meta.source)
        c, g = s.counters, s.gauges
        c["spec_lines"] += 1
        g["accept_rate"] = sample.accept_rate
        ts = _epoch(sample.meta.ts)
        if ts is not None:
            g["last_decode_ts"] = ts
        if sample.accept_len is not None:
            _observe_len(s, sample.accept_len, ts, 0)
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
        self.stats(sample.meta.source).counters["prefill_batches"] += 1

    def checkpoint(self) -> dict[str, Any]:
        return {name: s.to_dict() for name, s in self.sources.items()}

    def restore(self, data: dict[str, Any]) -> None:
        for name, saved in data.items():
            self.sources[name] = SourceStats.from_dict(saved)
