"""``acceptmon run``: the agent plus its HTTP server, signals and reloads."""

from __future__ import annotations

import contextlib
import errno
import ipaddress
import logging
import signal
import ssl
import threading
from collections.abc import Callable
from typing import Any

from acceptmon import settings as config_mod
from acceptmon.apps.agent import Agent, startup
from acceptmon.apps.agent.health import (
    budget_metrics,
    checkpoint_metrics,
    draft_metrics,
    finding_metrics,
    healthz,
    http_metrics,
    notify_metrics,
    reload_metrics,
    settings_metrics,
    source_metrics,
)
from acceptmon.apps.agent.http import (
    ConnectionStats,
    HttpError,
    HttpServer,
    json_prefix_route,
    json_route,
    metrics_route,
)
from acceptmon.detect.runstats import RunStats, run_json, verdict_json
from acceptmon.metrics.budget import hidden, over_budget
from acceptmon.metrics.collect import render
from acceptmon.model import Run
from acceptmon.notify.payload import finding_json
from acceptmon.notify.settings import NotifySettingsError
from acceptmon.runs.codec import run_to_dict
from acceptmon.statefiles import SYMLINKS

log = logging.getLogger("acceptmon.agent.daemon")


def _metrics(agent: Agent, http: ConnectionStats | None = None) -> str:
    def extras() -> Any:
        store, budget = agent.pipeline.store, agent.settings.max_exported_sources
        yield from source_metrics(agent.health())
        if http is not None:
            yield from http_metrics(http.snapshot(), http.open, http.tls_reload_errors)
        yield from checkpoint_metrics(
            agent.checkpoint_age(), agent.checkpoint_errors, agent.checkpoint_discarded, SYMLINKS.count
        )
        yield from reload_metrics(agent.reload_ok, agent.reload_at)
        yield from budget_metrics(*over_budget(store.sources, budget))
        beyond = hidden(store.sources, budget)
        missing = {s: v for s, v in agent.draft_missing.items() if s not in beyond}
        yield from draft_metrics(missing)
        unknown = {s: agent.tracker.settings_unknown(s) for s in agent.tracker.sources() if s not in beyond}
        yield from settings_metrics(unknown)
        engines = {name: st.engine for name, st in store.sources.items()}
        findings = [f for f in agent.findings if f.source not in beyond]
        raised = {key: n for key, n in agent.raised.items() if key[1] not in beyond}
        yield from finding_metrics(findings, raised, store.hosts, engines)
        if agent.notify_worker is not None:
            from acceptmon.notify import OUTCOMES

            yield from notify_metrics(agent.notify_worker.notifier.stats(), OUTCOMES)

    with agent.lock:
        return render(agent.pipeline.store, [extras], agent.settings.max_exported_sources)


def _runs(agent: Agent) -> list[dict[str, Any]]:
    """One compact row per run, as ``acceptmon runs --format json`` gives them, oldest first per
    source; runs from before the agent's memory (snapshots on disk) carry no acceptance numbers."""
    out = []
    for source in sorted({*agent.sources, *agent.tracker.sources()}):
        stats = {s.run.run_id: s for s in agent.run_table.of(source)}
        saved = agent.snapshots.load(source)
        known = {r["run_id"] for r in saved}
        for row in saved:
            if row["run_id"] not in stats:
                out.append(_compact_saved(source, row))
        for run in agent.tracker.runs(source):
            if run.run_id in stats or run.run_id not in known:
                out.append(_compact(source, run, stats.get(run.run_id) or RunStats(run)))
    return out


def _compact(source: str, run: Run, stats: RunStats) -> dict[str, Any]:
    full = run_to_dict(run)
    return {"source": source, **run_json(stats), "config_hash": _hash(run), "diff": full.get("diff")}


def _hash(run: Run) -> str | None:
    return run.config.hash if run.config else None


def _compact_saved(source: str, row: dict[str, Any]) -> dict[str, Any]:
    diff = row.get("diff") or {}
    keys = [c[0] for c in diff.get("changed", [])] + [a[0] for a in diff.get("added", [])]
    keys += [r[0] for r in diff.get("removed", [])]
    return {
        "source": source,
        "run_id": row.get("run_id"),
        "kind": row.get("kind") or "start",
        "reason": row.get("reason") or "",
        "started": row.get("started"),
        "intervals": None,
        "accept_len_median": None,
        "accept_len_ci": None,
        "accept_rate": None,
        "settings": row.get("settings"),
        "changed_keys": keys,
        "config_hash": (row.get("config") or {}).get("hash"),
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
    return [
        {"source": source, "verdict": verdict_json(agent.run_table.verdict(source))}
        for source in sorted({*agent.sources, *agent.tracker.sources()})
    ]


def serve(agent: Agent, cfg: config_mod.Settings | None = None) -> HttpServer:
    """Bind and start the HTTP server for ``cfg`` (default: the agent's); OSError if it cannot bind."""
    cfg = cfg or agent.settings
    host, port = cfg.listen_addr()
    web = cfg.web
    stats = ConnectionStats()
    routes = {
        "/metrics": metrics_route(lambda: _metrics(_fresh(agent), stats)),
        "/healthz": lambda: healthz(
            _restored(agent).last_progress, agent.pending(), agent.settings.stall_after
        ),
        "/api/findings": json_route(lambda: [finding_json(f) for f in _fresh(agent).findings]),
        "/api/runs": json_route(lambda: _locked(agent, _runs)),
        "/api/verdict": json_route(lambda: _locked(agent, _verdicts)),
    }
    prefixes = {
        "/api/runs/": json_prefix_route(lambda run_id: _locked(agent, lambda a: _run_detail(a, run_id)))
    }
    try:
        server = HttpServer(host, port, routes, web, stats=stats, prefix_routes=prefixes)
    except (ssl.SSLError, ValueError) as exc:  # certificate changed since validation
        raise config_mod.SettingsError(
            [f"web config: cannot load the TLS certificate or key: {exc}"]
        ) from None
    server.start()
    scheme = "https" if server.tls else "http"
    auth = " (basic auth)" if web is not None and web.users else ""
    log.info("serving /metrics on %s://%s:%d%s", scheme, host, server.port, auth)
    if web is None and not _is_loopback(host):
        log.warning(
            "listening on %s without a web config: /metrics and /api/* are open to anyone who can "
            "reach port %d; set web_config_file (TLS, basic auth) or listen on 127.0.0.1",
            host,
            server.port,
        )
    return server


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


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name: assume it resolves to a reachable address


def _watch(agent: Agent) -> Any:
    """Wake the loop on file events (watchdog); polling stays the backstop."""
    from acceptmon.sources.watch import DirectoryWatcher

    watcher = DirectoryWatcher(agent.waker, events=agent.events)
    if not watcher.start():
        return None
    for directory in agent.watch_dirs():
        watcher.add(directory)
    return watcher


def run(path: str | None, sources: list[str], overrides: dict[str, Any]) -> int:
    cfg = config_mod.load(path, sources, overrides)
    startup.check_state_dir(cfg.state_dir)
    stop, reload = threading.Event(), threading.Event()
    agent = Agent(cfg)

    def on_stop(signum: int, _frame: Any) -> None:
        log.info("signal %d: stopping", signum)
        stop.set()
        agent.waker.wake()

    def on_hup(_signum: int, _frame: Any) -> None:
        reload.set()
        agent.waker.wake()

    # Before anything else, so a SIGTERM during start-up still checkpoints and exits 0.
    signal.signal(signal.SIGTERM, on_stop)
    signal.signal(signal.SIGINT, on_stop)
    signal.signal(signal.SIGHUP, on_hup)
    try:
        server = serve(agent)
    except OSError as exc:
        raise startup.listen_failed(cfg.listen, exc) from None
    try:
        agent.open()
    except NotifySettingsError as exc:  # a webhook file or variable changed since the load
        agent.close()
        server.stop()
        raise config_mod.SettingsError(exc.problems) from None
    http = [server]
    watcher = _watch(agent)
    agent.reload_requested = lambda: _reload(agent, path, sources, overrides, http, watcher)  # type: ignore[method-assign]
    try:
        agent.run(stop, reload)
    finally:
        agent.close()
        if watcher is not None:
            watcher.stop()
        http[0].stop()
    log.info("stopped cleanly")
    return 0


def _reload(
    agent: Agent,
    path: str | None,
    sources: list[str],
    overrides: dict[str, Any],
    http: list[HttpServer],
    watcher: Any,
) -> None:
    """SIGHUP: re-read the settings and swap every stage, or keep the running ones whole.

    Like Prometheus: a refused reload logs every problem and sets
    ``acceptmon_config_last_reload_successful`` to 0; nothing half-applies.
    """
    try:
        cfg = config_mod.load(path, sources, overrides)
        if cfg.state_dir != agent.settings.state_dir:
            raise config_mod.SettingsError(
                [f"state_dir: {agent.settings.state_dir} → {cfg.state_dir} needs a restart, not a reload"]
            )
    except config_mod.SettingsError as exc:
        log.error("reload refused, keeping the running settings:\n%s", exc)
        agent.reload_done(False)
        return
    server, bound = _rebind(agent, cfg, http[0])
    if not bound:
        http[0] = server
        agent.reload_done(False)
        return
    agent.save_checkpoint()
    try:
        agent.reconfigure(cfg)
    except NotifySettingsError as exc:  # a webhook file or variable changed since the load
        log.error("reload refused, keeping the running settings:\n%s", config_mod.SettingsError(exc.problems))
        _back_to(agent, http, server)
        return
    except Exception as exc:  # a file changed between the checks and the build: keep running
        log.error("reload failed part way (%s); run check-config and reload again", type(exc).__name__)
        _back_to(agent, http, server)
        return
    if server is not http[0]:
        http[0].stop()
        http[0] = server
    if watcher is not None:
        for directory in agent.watch_dirs():
            watcher.add(directory)
    agent.reload_done(True)
    log.info("settings reloaded: %d sources", len(cfg.sources))


def _rebind(agent: Agent, cfg: config_mod.Settings, old: HttpServer) -> tuple[HttpServer, bool]:
    """The server for ``cfg`` and whether it is on ``cfg``'s address.

    ``old`` stays when the address is unchanged, or when the new one cannot be
    bound; the same port on another host address is only free once ``old`` is
    closed, so then ``old``'s address is bound again if the new one fails.
    """
    if _http_settings(cfg) == _http_settings(agent.settings):
        return old, True
    try:
        return serve(agent, cfg), True
    except OSError as exc:
        error = exc
    if error.errno == errno.EADDRINUSE and cfg.listen_addr()[1] == agent.settings.listen_addr()[1]:
        old.stop()
        try:
            return serve(agent, cfg), True
        except OSError as exc:
            error = exc
        old = serve(agent)  # its own address, free again a moment ago
    log.error(
        "reload refused, keeping the running settings and http://%s: cannot listen on %s: %s",
        agent.settings.listen,
        cfg.listen,
        startup.reason(error),
    )
    return old, False


def _back_to(agent: Agent, http: list[HttpServer], new: HttpServer) -> None:
    """Undo a rebind after a failed reload: if the old server was closed to free its port,
    bind its address (``agent.settings``'s, still the old settings) again."""
    agent.reload_done(False)
    if new is http[0]:
        return
    new.stop()
    with contextlib.suppress(OSError):  # still bound: the old server never stopped
        http[0] = serve(agent)


def _http_settings(cfg: config_mod.Settings) -> tuple[Any, ...]:
    """What the HTTP server is built from; a change means a new server."""
    return (cfg.listen, getattr(cfg, "web_config_file", None))
