"""The one catalogue of metric names, and the collector that serves them.

Dashboards, alert rules and tests all refer to names defined here (a test
checks that they do). The collector reads the store at scrape time; nothing
is copied into prometheus-client's own metric objects, so a scrape shows a
consistent view and costs nothing between scrapes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from functools import lru_cache
from itertools import accumulate, islice, repeat
from typing import Literal

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector, CollectorRegistry
from prometheus_client.samples import Sample

from acceptmon.metrics.budget import exported
from acceptmon.metrics.store import ACCEPT_LEN_BUCKETS, SourceStats, Store

MetricType = Literal["counter", "gauge", "histogram"]


@dataclass(frozen=True, slots=True)
class MetricDef:
    name: str
    type: MetricType
    help: str
    labels: tuple[str, ...] = ("source",)


def _c(name: str, help_: str, labels: tuple[str, ...] = ("source",)) -> MetricDef:
    return MetricDef(name, "counter", help_, labels)


def _g(name: str, help_: str, labels: tuple[str, ...] = ("source",)) -> MetricDef:
    return MetricDef(name, "gauge", help_, labels)


#: Counter names are given without the ``_total`` suffix prometheus-client adds.
#: Metrics of the parsed logs: the same in one-shot output and on the agent. Every one
#: also carries ``engine`` (sglang, vllm, llamacpp, lmdeploy) right after ``source``:
#: the names stay engine-neutral, the engine is a label.
_STORE: tuple[MetricDef, ...] = (
    _c("acceptmon_lines", "Log lines read."),
    _c(
        "acceptmon_parse_errors",
        "Lines that looked like records but could not be used, by kind "
        "(malformed, overlong, out_of_range, too_large, exception, time_ahead, "
        "container_malformed, container_overlong).",
        ("source", "kind"),
    ),
    _c("acceptmon_decode_batches", "SGLang Decode batch lines (one per logging interval and rank)."),
    _c("acceptmon_prefill_batches", "SGLang Prefill batch lines."),
    _c("acceptmon_spec_lines", "vLLM spec-decode metric lines."),
    _c("acceptmon_server_starts", "Server starts (server_args lines)."),
    _c("acceptmon_server_shutdowns", "Graceful server stops seen in the log."),
    _c("acceptmon_server_crashes", "Scheduler crashes and SIGQUITs seen in the log."),
    _c("acceptmon_ray_lost_samples", "Decode lines Ray de-duplicated away ([repeated Nx across cluster])."),
    _c(
        "acceptmon_spec_verify_rounds",
        "Request verify rounds (SGLang: estimated as decode_log_interval x running requests).",
    ),
    _c("acceptmon_spec_emitted_tokens", "Tokens committed by verify rounds, bonus token included."),
    _c("acceptmon_spec_accepted_tokens", "Draft tokens accepted (bonus excluded; exact for vLLM)."),
    _c("acceptmon_spec_draft_tokens", "Draft tokens proposed (exact for vLLM)."),
    MetricDef(
        "acceptmon_spec_accept_length_intervals",
        "histogram",
        "Distribution of per-interval mean accept length (bonus token included).",
    ),
    _g("acceptmon_spec_accept_length", "Mean accept length of the last interval (bonus token included)."),
    _g("acceptmon_spec_accept_rate", "Fraction of draft tokens accepted in the last interval (0-1)."),
    _g("acceptmon_spec_accept_rate_printed", "accept rate as the server printed it (release-specific)."),
    _g("acceptmon_running_requests", "Running requests at the last Decode line."),
    _g("acceptmon_queued_requests", "Queued requests at the last Decode line."),
    _g("acceptmon_token_usage_ratio", "KV-cache token usage at the last Decode line (0-1)."),
    _g(
        "acceptmon_gen_throughput_tokens_per_second", "Generation throughput printed at the last Decode line."
    ),
    _g(
        "acceptmon_last_decode_timestamp_seconds",
        "Log timestamp of the last Decode line (wall time read in the source's time zone).",
    ),
    _g(
        "acceptmon_spec_position_accept_ratio",
        "vLLM: fraction of drafts whose token at this position (0-based) was accepted, last interval.",
        ("source", "position"),
    ),
    _g(
        "acceptmon_run_info",
        "Current run of a source; speculative settings as labels (always 1).",
        (
            "source",
            "host",
            "run_id",
            "model",
            "draft_model",
            "algorithm",
            "num_steps",
            "eagle_topk",
            "num_draft_tokens",
            "config_hash",
        ),
    ),
)


def _with_engine(m: MetricDef) -> MetricDef:
    at = m.labels.index("source") + 1
    return replace(m, labels=(*m.labels[:at], "engine", *m.labels[at:]))


STORE_CATALOGUE: tuple[MetricDef, ...] = tuple(_with_engine(m) for m in _STORE)

#: The live agent's own health, findings and notifications.
AGENT_CATALOGUE: tuple[MetricDef, ...] = (
    _g(
        "acceptmon_build_info",
        "The agent's release and the Python running it (always 1): which version answers, mid-rollout.",
        ("version", "python"),
    ),
    _g("acceptmon_source_up", "1 while the source can be read (file present and readable, host reachable)."),
    _c("acceptmon_source_read_bytes", "Bytes read from the source since the agent started."),
    _c("acceptmon_source_rotations", "Rotations (rename, delete and recreate) seen."),
    _c("acceptmon_source_truncations", "Truncations (copytruncate) seen."),
    _g("acceptmon_source_lag_bytes", "Bytes written to the source but not yet read (file size - offset)."),
    _g("acceptmon_source_open_files", "Files the source holds open."),
    _c(
        "acceptmon_source_errors",
        "Source errors by kind (permission_denied, unreachable, auth, host_key, ...).",
        ("source", "kind"),
    ),
    _g(
        "acceptmon_run_settings_unknown",
        "1 while the current run has no server_args line and no declared speculative: settings "
        "(accept rates cannot be normalised).",
    ),
    _g(
        "acceptmon_workload_info",
        "A container workload's series and the pod and container it reads now, on which node (always 1): "
        "join on source to see a series by pod.",
        ("source", "namespace", "pod", "container", "node"),
    ),
    _g(
        "acceptmon_draft_config_missing",
        "1 while the current run's draft model config.json could not be found (changes inside it are invisible).",
    ),
    _g("acceptmon_checkpoint_age_seconds", "Seconds since the last successful checkpoint.", ()),
    _c("acceptmon_checkpoint_errors", "Checkpoints that could not be written (disk full, permissions).", ()),
    _c(
        "acceptmon_state_symlinks_refused",
        "Symlinks found in the state directory where a state file or directory belongs, not followed.",
        (),
    ),
    _c(
        "acceptmon_checkpoint_discarded",
        "Checkpoints found unusable at start-up (corrupt or of the wrong shape), moved aside.",
        (),
    ),
    _g(
        "acceptmon_config_last_reload_successful",
        "1 if the last load or SIGHUP reload of the settings succeeded, 0 if it was refused.",
        (),
    ),
    _g(
        "acceptmon_config_last_reload_success_timestamp_seconds",
        "When the settings were last loaded or reloaded successfully (Unix time).",
        (),
    ),
    _g(
        "acceptmon_finding_active",
        "1 while a finding of this rule is firing for the source; change names the changed config "
        "keys (keys only, bounded) and config_hash the run's config, so alerts group by rollout.",
        ("rule", "source", "severity", "host", "engine", "change", "config_hash"),
    ),
    _g(
        "acceptmon_finding_change_info",
        "One sample per changed config key of a firing finding (at most 8), with its redacted, "
        "clipped values before and after (always 1): what alert annotations show.",
        ("rule", "source", "key", "before", "after"),
    ),
    _g(
        "acceptmon_finding_accept_length",
        "A firing drop's median accept length before and after (when), as the finding measured it.",
        ("rule", "source", "when"),
    ),
    _c("acceptmon_findings", "Findings raised.", ("rule", "source", "severity")),
    _c(
        "acceptmon_drop_tokens_lost_estimate",
        "Estimated decode tokens lost to open acceptance drops: generated tokens x (before/after accept "
        "len - 1) while the drop lasted; / gen throughput = seconds of decode (GPU time) lost.",
        ("source", "engine", "rule"),
    ),
    _c(
        "acceptmon_notifications",
        "Notifications by outcome (sent, retried, failed_permanent, dropped, deduped).",
        ("notifier", "outcome"),
    ),
    _c(
        "acceptmon_notifications_held",
        "Finding changes not sent yet because the finding flaps (announced again within 5 min); "
        "each is sent when that window ends if it still holds.",
        ("notifier",),
    ),
    _g("acceptmon_notify_queue_depth", "Notifications waiting to be delivered.", ("notifier",)),
    _g(
        "acceptmon_notify_oldest_pending_seconds",
        "Age of the oldest undelivered notification.",
        ("notifier",),
    ),
    _c(
        "acceptmon_http_connections_rejected",
        "HTTP connections closed unanswered by reason (limit, overloaded, head_timeout, write_timeout, "
        "tls_error, fd_exhausted, bad_request, auth_throttled).",
        ("reason",),
    ),
    _g("acceptmon_http_open_connections", "HTTP connections open now (idle ones cost no thread).", ()),
    _c(
        "acceptmon_tls_reload_errors",
        "Changed TLS certificate or key files that could not be loaded (the old ones are still served).",
        (),
    ),
    _g(
        "acceptmon_sources_over_budget",
        "Sources read but beyond max_exported_sources: their per-source series are not exported.",
        (),
    ),
    _c(
        "acceptmon_sources_over_budget_lines",
        "Log lines read from the sources beyond max_exported_sources.",
        (),
    ),
)

CATALOGUE = STORE_CATALOGUE + AGENT_CATALOGUE

BY_NAME = {m.name: m for m in CATALOGUE}

_COUNTER_OF = {
    "acceptmon_lines": "lines",
    "acceptmon_decode_batches": "decode_batches",
    "acceptmon_prefill_batches": "prefill_batches",
    "acceptmon_spec_lines": "spec_lines",
    "acceptmon_server_starts": "server_starts",
    "acceptmon_server_shutdowns": "server_shutdowns",
    "acceptmon_server_crashes": "server_crashes",
    "acceptmon_ray_lost_samples": "ray_lost_samples",
    "acceptmon_spec_verify_rounds": "verify_rounds",
    "acceptmon_spec_emitted_tokens": "emitted_tokens",
    "acceptmon_spec_accepted_tokens": "accepted_tokens",
    "acceptmon_spec_draft_tokens": "draft_tokens",
}
_GAUGE_OF = {
    "acceptmon_spec_accept_length": "accept_len",
    "acceptmon_spec_accept_rate": "accept_rate",
    "acceptmon_spec_accept_rate_printed": "accept_rate_printed",
    "acceptmon_running_requests": "running_req",
    "acceptmon_queued_requests": "queue_req",
    "acceptmon_token_usage_ratio": "token_usage",
    "acceptmon_gen_throughput_tokens_per_second": "gen_throughput",
    "acceptmon_last_decode_timestamp_seconds": "last_decode_ts",
}


def exposed_names() -> set[str]:
    """Every series name a scrape can contain (for dashboard/rule consistency tests)."""
    names: set[str] = set()
    for m in CATALOGUE:
        if m.type == "counter":
            names.add(m.name + "_total")
        elif m.type == "histogram":
            names.update({m.name + "_bucket", m.name + "_sum", m.name + "_count"})
        else:
            names.add(m.name)
    return names


def _run_labels(source: str, s: SourceStats, host: str = "") -> list[str]:
    run = s.run
    if run is None:
        return [source, s.engine, host, "", "", "", "", "", "", "", ""]
    st = run.spec

    def txt(v: object) -> str:
        return "" if v is None else str(v)

    cfg = run.config.hash if run.config else ""
    return [
        source,
        s.engine,
        host,
        run.run_id,
        txt(st.model_path),
        txt(st.draft_model_path),
        txt(st.algorithm),
        txt(st.num_steps),
        txt(st.eagle_topk),
        txt(st.num_draft_tokens),
        cfg,
    ]


#: The families ``family`` makes, each with its own ``add_metric``.
Family = CounterMetricFamily | GaugeMetricFamily | HistogramMetricFamily


def family(m: MetricDef) -> Family:
    if m.type == "counter":
        return CounterMetricFamily(m.name, m.help, labels=m.labels)
    if m.type == "gauge":
        return GaugeMetricFamily(m.name, m.help, labels=m.labels)
    return HistogramMetricFamily(m.name, m.help, labels=m.labels)


#: One sample of a source: its name, its label names and values, and its value.
SourceSample = tuple[str, tuple[str, ...], tuple[str, ...], float]


def store_metrics(store: Store, max_sources: int | None = None) -> Iterator[Metric]:
    """Metric families for the sources of ``store`` within the series budget (``metrics/budget.py``;
    None: every source), sorted for stable output."""
    items = sorted(exported(store.sources, max_sources))
    for m in STORE_CATALOGUE:
        fam = family(m)
        for source, s in items:
            for name, names, values, value in source_samples(m, source, s, store.hosts.get(source, "")):
                fam.samples.append(Sample(name, dict(zip(names, values, strict=True)), value))
        yield fam


#: The bucket bounds as ``le`` label values (``repr``, as prometheus-client's ``add_metric``
#: would be given them), then ``+Inf``.
_BOUNDS = (*map(repr, ACCEPT_LEN_BUCKETS), "+Inf")


@lru_cache(maxsize=1024)
def _bucket_labels(
    names: tuple[str, ...], labels: tuple[str, str]
) -> tuple[tuple[str, ...], tuple[tuple[str, ...], ...], tuple[str, ...]]:
    """A source's bucket label names, its label values of each finite bucket, and of ``+Inf``
    (``_BOUNDS``): the same at every scrape and backfill snapshot, so made once per source."""
    values = tuple((*labels, bound) for bound in _BOUNDS)
    return (*names, "le"), values[:-1], values[-1]


def source_samples(m: MetricDef, source: str, s: SourceStats, host: str) -> Iterator[SourceSample]:
    """The samples of ``source`` in the store family ``m``, named as prometheus-client's
    ``add_metric`` names them: the one mapping from the store to series, for scrapes
    (``store_metrics``) and for backfill's history, which takes thousands of snapshots."""
    names, labels = m.labels, (source, s.engine)
    if m.type == "histogram":  # the accept length histogram
        count = s.counters["accept_len_count"]
        if count:
            le, bounds, inf = _bucket_labels(names, labels)
            k, bucket = len(bounds), m.name + "_bucket"
            cums = islice(accumulate(s.buckets, initial=0), 1, None)  # cum = 0; cum += n, in C
            yield from zip(repeat(bucket, k), repeat(le, k), bounds, cums, strict=True)
            yield bucket, le, inf, int(count)
            yield m.name + "_count", names, labels, int(count)
            yield m.name + "_sum", names, labels, s.counters["accept_len_sum"]
    elif m.name in _COUNTER_OF:
        yield m.name + "_total", names, labels, s.counters[_COUNTER_OF[m.name]]
    elif m.name == "acceptmon_parse_errors":
        for kind, errors in s.error_kinds.items():
            yield m.name + "_total", names, (*labels, kind), errors
    elif m.name in _GAUGE_OF:
        value = s.gauges[_GAUGE_OF[m.name]]
        if value is not None:
            yield m.name, names, labels, value
    elif m.name == "acceptmon_spec_position_accept_ratio":
        for position, ratio in enumerate(s.positions):
            yield m.name, names, (*labels, str(position)), ratio
    elif m.name == "acceptmon_run_info" and s.run is not None:
        yield m.name, names, tuple(_run_labels(source, s, host)), 1.0


class StoreCollector(Collector):
    """prometheus-client collector over our store plus any extra producers."""

    def __init__(
        self,
        store: Store,
        extra: Iterable[Callable[[], Iterable[Metric]]] = (),
        max_sources: int | None = None,
    ) -> None:
        self._store = store
        self._extra = list(extra)
        self._max_sources = max_sources

    def collect(self) -> Iterator[Metric]:
        yield from store_metrics(self._store, self._max_sources)
        for produce in self._extra:
            yield from produce()


def render(
    store: Store, extra: Iterable[Callable[[], Iterable[Metric]]] = (), max_sources: int | None = None
) -> str:
    """The text exposition, exactly as ``/metrics`` would serve it (``max_sources``: the series budget)."""
    from prometheus_client import generate_latest

    registry = CollectorRegistry(auto_describe=False)
    registry.register(StoreCollector(store, extra, max_sources))
    return generate_latest(registry).decode()
