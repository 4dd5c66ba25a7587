"""Every family ``/metrics`` serves beyond the store's, built from plain values.

The agent's scrape (``apps/agent/api.py``) and ``oneshot``'s prom output both build
them here, so a log read once prints the families a live agent would serve for it.
"""

from __future__ import annotations

import math
import platform
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from prometheus_client.core import Metric

from acceptmon import __version__
from acceptmon.metrics.budget import hidden, over_budget
from acceptmon.metrics.collect import BY_NAME, family
from acceptmon.metrics.store import Store
from acceptmon.model import Finding
from acceptmon.sources.base import SourceHealth
from acceptmon.text.change import change_label, change_pairs


@dataclass(frozen=True)
class Served:
    """What a scrape shows beyond the store: the agent fills it from its state, ``oneshot``
    from a log read to its end. Series of sources beyond the budget are left out here."""

    health: Mapping[str, SourceHealth]
    findings: list[Finding]
    #: Findings raised by (rule, source, severity): ``acceptmon_findings_total``.
    raised: Mapping[tuple[str, str, str], int]
    draft_missing: Mapping[str, bool]
    settings_unknown: Mapping[str, bool]
    #: Container workloads there now: their identity labels.
    workloads: Mapping[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)
    #: (age or None, errors, discarded, symlinks refused).
    checkpoint: tuple[float | None, int, int, int] = (None, 0, 0, 0)
    #: (the last (re)load took, when one last did); None: no settings were (re)loaded.
    reload: tuple[bool, float] | None = None
    #: Whether ``acceptmon_build_info`` has its sample (not in ``oneshot``: its goldens
    #: must not change with the Python that runs them).
    build: bool = True
    #: (connections rejected by reason, open connections, TLS reload errors), or None.
    http: tuple[Mapping[str, int], int, int] | None = None
    #: (queue stats, outcomes) when notifiers run, else None.
    notify: tuple[list[Any], tuple[str, ...]] | None = None
    #: Tokens lost to drops by (source, rule) (``detect.cost.CostMeter.lost``).
    lost: Mapping[tuple[str, str], float] = field(default_factory=dict)


def served(store: Store, budget: int | None, got: Served) -> Iterator[Metric]:
    """Every family beyond the store's, in the order a scrape shows them."""
    beyond = hidden(store.sources, budget)
    yield from build_metrics() if got.build else [_fam("acceptmon_build_info")]
    yield from source_metrics(got.health)
    if got.http is not None:
        yield from http_metrics(*got.http)
    yield from checkpoint_metrics(*got.checkpoint)
    if got.reload is not None:
        yield from reload_metrics(*got.reload)
    else:
        yield from (_fam(n) for n in RELOAD)
    yield from budget_metrics(*over_budget(store.sources, budget))
    yield from draft_metrics({s: v for s, v in got.draft_missing.items() if s not in beyond})
    yield from workload_metrics({s: v for s, v in got.workloads.items() if s not in beyond})
    yield from settings_metrics({s: v for s, v in got.settings_unknown.items() if s not in beyond})
    engines = {name: st.engine for name, st in store.sources.items()}
    findings = [f for f in got.findings if f.source not in beyond]
    raised = {key: n for key, n in got.raised.items() if key[1] not in beyond}
    yield from finding_metrics(findings, raised, store.hosts, engines)
    yield from cost_metrics({k: v for k, v in got.lost.items() if k[0] not in beyond}, engines)
    if got.notify is not None:
        yield from notify_metrics(*got.notify)


def _fam(name: str) -> Any:
    return family(BY_NAME[name])


def _single(name: str, value: float) -> Metric:
    """A family of the agent's own with its one unlabelled sample."""
    fam = _fam(name)
    fam.add_metric([], float(value))
    single: Metric = fam
    return single


def build_metrics() -> Iterator[Metric]:
    """``acceptmon_build_info``: which release built the series."""
    fam = _fam("acceptmon_build_info")
    fam.add_metric([__version__, platform.python_version()], 1.0)
    yield fam


def source_metrics(health: Mapping[str, SourceHealth]) -> Iterator[Metric]:
    names = sorted(health)
    simple = (
        ("acceptmon_source_up", lambda h: 1.0 if h.up else 0.0),
        ("acceptmon_source_read_bytes", lambda h: h.bytes_read),
        ("acceptmon_source_rotations", lambda h: h.rotations),
        ("acceptmon_source_truncations", lambda h: h.truncations),
        ("acceptmon_source_lag_bytes", lambda h: h.lag_bytes),
        ("acceptmon_source_open_files", lambda h: h.open_files),
    )
    for metric, value in simple:
        fam = _fam(metric)
        for name in names:
            fam.add_metric([name], float(value(health[name])))
        yield fam
    errors = _fam("acceptmon_source_errors")
    for name in names:
        for kind, count in sorted(health[name].errors):
            errors.add_metric([name, kind], float(count))
    yield errors


def checkpoint_metrics(
    age: float | None, errors: int, discarded: int = 0, symlinks: int = 0
) -> Iterator[Metric]:
    age_fam = _fam("acceptmon_checkpoint_age_seconds")
    if age is not None:
        age_fam.add_metric([], age)
    yield age_fam
    yield _single("acceptmon_checkpoint_errors", errors)
    yield _single("acceptmon_checkpoint_discarded", discarded)
    yield _single("acceptmon_state_symlinks_refused", symlinks)


def draft_metrics(missing: Mapping[str, bool]) -> Iterator[Metric]:
    """Which sources run with a draft config acceptmon could not read."""
    fam = _fam("acceptmon_draft_config_missing")
    for source, gone in sorted(missing.items()):
        fam.add_metric([source], 1.0 if gone else 0.0)
    yield fam


def workload_metrics(labels: Mapping[str, tuple[tuple[str, str], ...]]) -> Iterator[Metric]:
    """Each container workload's series with its current pod (one sample per series: a replaced
    pod's sample goes with it, so pod churn adds no series)."""
    fam = _fam("acceptmon_workload_info")
    for source, pairs in sorted(labels.items()):
        found = dict(pairs)
        if "container" in found:
            fam.add_metric(
                [source, *(found.get(k, "") for k in ("namespace", "pod", "container", "node"))], 1.0
            )
    yield fam


def settings_metrics(unknown: Mapping[str, bool]) -> Iterator[Metric]:
    """Which sources run without known speculative settings."""
    fam = _fam("acceptmon_run_settings_unknown")
    for source, flag in sorted(unknown.items()):
        fam.add_metric([source], 1.0 if flag else 0.0)
    yield fam


def budget_metrics(over: int, lines: float) -> Iterator[Metric]:
    """Sources beyond the series budget (``metrics/budget.py``) and the lines they read."""
    yield _single("acceptmon_sources_over_budget", over)
    yield _single("acceptmon_sources_over_budget_lines", lines)


RELOAD = (
    "acceptmon_config_last_reload_successful",
    "acceptmon_config_last_reload_success_timestamp_seconds",
)


def reload_metrics(ok: bool, at: float) -> Iterator[Metric]:
    """Whether the last settings (re)load took, and when one last did (as Prometheus does)."""
    yield _single(RELOAD[0], 1.0 if ok else 0.0)
    yield _single(RELOAD[1], at)


def finding_metrics(
    findings: list[Finding],
    raised: Mapping[tuple[str, str, str], int],
    hosts: Mapping[str, str] | None = None,
    engines: Mapping[str, str] | None = None,
) -> Iterator[Metric]:
    """``hosts`` and ``engines`` map a source to its host and inference server (the ``host``
    and ``engine`` labels of ``acceptmon_finding_active``)."""
    hosts, engines = hosts or {}, engines or {}
    active, changes = _fam("acceptmon_finding_active"), _fam("acceptmon_finding_change_info")
    firing: dict[tuple[str, str, str], float] = dict.fromkeys(raised, 0.0)
    #: The change of each (rule, source, severity): the firing finding's, else the latest one's.
    change: dict[tuple[str, str, str], tuple[str, str]] = {}
    shown: set[tuple[str, ...]] = set()
    medians: dict[tuple[str, str, str], float] = {}
    for f in findings:
        key: tuple[str, str, str] = (f.rule, f.source, str(f.severity))
        if f.active or firing.get(key, 0.0) == 0.0:
            change[key] = (change_label(f.diff), f.config_hash)
        firing[key] = max(firing.get(key, 0.0), 1.0 if f.active else 0.0)
        if f.active:
            shown.update((f.rule, f.source, *pair) for pair in change_pairs(f.diff))
            sides = (("before", f.before_accept_len), ("after", f.after_accept_len))
            medians.update({(f.rule, f.source, w): v for w, v in sides if v is not None and math.isfinite(v)})
    for info in sorted(shown):
        changes.add_metric(list(info), 1.0)
    lengths = _fam("acceptmon_finding_accept_length")
    for side, value in sorted(medians.items()):
        lengths.add_metric(list(side), value)
    for key in sorted(firing):
        labels = [*key, hosts.get(key[1], ""), engines.get(key[1], ""), *change.get(key, ("", ""))]
        active.add_metric(labels, firing[key])
    yield active
    yield changes
    yield lengths
    total = _fam("acceptmon_findings")
    for key in sorted(raised):
        total.add_metric(list(key), float(raised[key]))
    yield total


def cost_metrics(lost: Mapping[tuple[str, str], float], engines: Mapping[str, str]) -> Iterator[Metric]:
    """Tokens lost to drops per (source, rule) (``detect.cost.CostMeter.lost``)."""
    fam = _fam("acceptmon_drop_tokens_lost_estimate")
    for (source, rule), tokens in sorted(lost.items()):
        fam.add_metric([source, engines.get(source, ""), rule], tokens)
    yield fam


def notify_metrics(stats: list[Any], outcomes: tuple[str, ...]) -> Iterator[Metric]:
    sent, held, depth, oldest = (
        _fam("acceptmon_notifications"),
        _fam("acceptmon_notifications_held"),
        _fam("acceptmon_notify_queue_depth"),
        _fam("acceptmon_notify_oldest_pending_seconds"),
    )
    for q in stats:
        for outcome in outcomes:
            sent.add_metric([q.notifier, outcome], float(q.count(outcome)))
        held.add_metric([q.notifier], float(q.held))
        depth.add_metric([q.notifier], float(q.depth))
        oldest.add_metric([q.notifier], float(q.oldest_pending_s or 0.0))
    yield from (sent, held, depth, oldest)


def http_metrics(
    rejected: Mapping[str, int], open_connections: int, tls_reload_errors: int = 0
) -> Iterator[Metric]:
    fam = _fam("acceptmon_http_connections_rejected")
    for reason in sorted(rejected):
        fam.add_metric([reason], float(rejected[reason]))
    yield fam
    yield _single("acceptmon_http_open_connections", open_connections)
    yield _single("acceptmon_tls_reload_errors", tls_reload_errors)
