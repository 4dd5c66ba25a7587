"""What the agent's HTTP face answers: /metrics, /healthz, and the /api rows (findings, runs,
one run in full, verdicts), built from the agent's state under its lock.

A response shows every line written before its request: /metrics and /api/* ask the loop to
catch up first (``catchup.py``, bounded); /healthz does not, and takes no lock.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from acceptmon.apps.agent.health import healthz
from acceptmon.apps.agent.web.routes import (
    HttpError,
    PrefixRoutes,
    QueryRoutes,
    Routes,
    json_prefix_route,
    json_query_route,
    json_route,
    metrics_route,
)
from acceptmon.apps.agent.web.server import ConnectionStats
from acceptmon.detect.runstats import RunStats, run_json, verdict_json
from acceptmon.ingest.families import Served, served
from acceptmon.ingest.generated import costed
from acceptmon.metrics.collect import render
from acceptmon.model import Finding, Run
from acceptmon.notify.payload import finding_json
from acceptmon.runs.codec import run_from_dict, run_to_dict
from acceptmon.statefiles import SYMLINKS

if TYPE_CHECKING:
    from acceptmon.apps.agent.agent import Agent


def routes(agent: Agent, stats: ConnectionStats) -> tuple[Routes, PrefixRoutes, QueryRoutes]:
    """Every path the server answers: plain, ``/api/runs/<run_id>``, and those that take
    ``?source=NAME`` (repeatable; none: every source)."""
    table = {
        "/metrics": metrics_route(lambda: metrics_text(_fresh(agent), stats)),
        "/healthz": lambda: healthz(
            _restored(agent).loop.last_progress, agent.loop.pending(), agent.settings.stall_after
        ),
        "/api/findings": json_route(lambda: [_finding(f) for f in _fresh(agent).announce.findings]),
    }
    prefixes = {
        "/api/runs/": json_prefix_route(lambda run_id: _locked(agent, lambda a: _run_detail(a, run_id)))
    }
    queries = {
        "/api/runs": json_query_route(lambda q: _only(q, _locked(agent, _runs))),
        "/api/verdict": json_query_route(lambda q: _only(q, _locked(agent, _verdicts))),
    }
    return table, prefixes, queries


def _finding(f: Finding) -> dict[str, Any]:
    """The shared finding shape plus the run's config hash, as ``acceptmon_finding_active``
    labels it, so an Alertmanager or Slack consumer groups a fleet's findings by rollout (a hash
    of the redacted config: no secret)."""
    return {**finding_json(f), "config_hash": f.config_hash or None}


def _only(query: dict[str, list[str]], rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of the sources ``?source=`` names (all without it; an unknown name: none)."""
    wanted = query.get("source")
    return rows if wanted is None else [row for row in rows if row["source"] in wanted]


def metrics_text(agent: Agent, http: ConnectionStats | None = None) -> str:
    def extras() -> Any:
        identities = agent.origins.identities
        # Only the workloads there are now: a deleted one's pod labels go with it.
        live = {s for _, src in agent.sources.values() for s in getattr(src, "series", list)()}
        notify = None
        if agent.announce.worker is not None:
            from acceptmon.notify import OUTCOMES

            notify = (agent.announce.worker.notifier.stats(), OUTCOMES)
        got = Served(
            health={name: src.health() for name, (_, src) in agent.sources.items()},
            findings=agent.announce.findings,
            raised=agent.announce.raised,
            draft_missing=agent.origins.draft_missing,
            settings_unknown={s: agent.tracker.settings_unknown(s) for s in agent.tracker.sources()},
            workloads={s: identities[s].labels for s in live if s in identities},
            checkpoint=(
                agent.checkpoint.age(),
                agent.checkpoint.errors,
                agent.checkpoint.discarded,
                SYMLINKS.count,
            ),
            reload=(agent.reload_ok, agent.reload_at),
            http=None if http is None else (http.snapshot(), http.open, http.tls_reload_errors),
            notify=notify,
            lost=agent.cost.lost,
        )
        yield from served(agent.pipeline.store, agent.settings.max_exported_sources, got)

    with agent.lock:
        return render(agent.pipeline.store, [extras], agent.settings.max_exported_sources)


def _runs(agent: Agent) -> list[dict[str, Any]]:
    """One compact row per run, as ``acceptmon runs --format json`` gives them, oldest first per
    source; runs whose numbers the agent never had (snapshots on disk only) carry none."""
    out = []
    for source in sorted({*agent.sources, *agent.tracker.sources()}):
        stats = {s.run.run_id: s for s in agent.run_table.of(source)}
        saved = agent.snapshots.load(source)
        known = {r["run_id"] for r in saved}
        for row in saved:
            kept = stats.get(row["run_id"])
            if kept is None:
                out.append(_compact_saved(source, row))
            elif all(r.run_id != kept.run.run_id for r in agent.tracker.runs(source)):
                out.append(_compact(source, kept.run, kept))
        for run in agent.tracker.runs(source):
            if run.run_id in stats or run.run_id not in known:
                out.append(_compact(source, run, stats.get(run.run_id) or RunStats(run)))
    identities = agent.origins.identities
    for row in out:
        identity = identities.get(row["source"])
        if identity is not None:
            row["host"], row["labels"] = identity.host, dict(identity.labels)
    return out


def _compact(source: str, run: Run, stats: RunStats) -> dict[str, Any]:
    full = run_to_dict(run)
    return {"source": source, **run_json(stats), "config_hash": _hash(run), "diff": full.get("diff")}


def _hash(run: Run) -> str | None:
    return run.config.hash if run.config else None


def _compact_saved(source: str, row: dict[str, Any]) -> dict[str, Any]:
    """A run known from its snapshot only: the live row's shape, its config change in the same
    words (the snapshot keeps the diff against the run before), and no numbers."""
    run = run_from_dict(row)  # ``SnapshotStore.load`` has checked every field already
    numbers = dict.fromkeys(("duration_s", "accept_len_median", "accept_len_ci", "accept_rate"))
    return {
        "source": source,
        **run_json(RunStats(run)),
        **numbers,
        "intervals": None,
        "config_hash": _hash(run),
        "diff": row.get("diff"),
    }


def _run_detail(agent: Agent, run_id: str) -> list[dict[str, Any]]:
    """Every source's run ``run_id`` in full (server args redacted, draft config, diff)."""
    found = []
    for source in sorted({*agent.sources, *agent.tracker.sources()}):
        live = {r.run_id: run_to_dict(r) for r in agent.tracker.runs(source)}
        saved = {r["run_id"]: r for r in agent.snapshots.load(source)}
        full = live.get(run_id) or saved.get(run_id)
        if full is not None:
            found.append({"source": source, **full})
    if not found:
        raise HttpError(404, f"no run {run_id[:40]!r}; /api/runs lists them\n")
    return found


def _verdicts(agent: Agent) -> list[dict[str, Any]]:
    tokens = agent.generated.tokens
    return [
        {"source": source, "verdict": verdict_json(costed(agent.run_table.verdict(source), tokens, source))}
        for source in sorted({*agent.sources, *agent.tracker.sources()})
    ]


def _locked(agent: Agent, produce: Callable[[Agent], Any]) -> Any:
    """``produce(agent)`` under the agent lock, once the checkpoint is restored and caught up."""
    _fresh(agent)
    with agent.lock:
        return produce(agent)


def _fresh(agent: Agent) -> Agent:
    """The agent once its loop has read every line written before this request (or the
    catch-up deadline passed): appended lines do not wake the loop, scrapes do. Called
    without the agent lock: the pass it waits for takes that lock to feed."""
    _restored(agent).catchup.ask()
    return agent


def _restored(agent: Agent) -> Agent:
    """503 until the checkpoint is restored: empty counters would look like a reset to
    Prometheus and a missing open finding like a resolution to Alertmanager."""
    if not agent.restored:
        raise HttpError(503, "starting: restoring the checkpoint\n")
    return agent
