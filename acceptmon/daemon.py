"""``acceptmon run``: the agent plus its HTTP server, signals and reloads."""

from __future__ import annotations

import logging
import signal
import threading
from typing import Any

from acceptmon import config as config_mod
from acceptmon.agent import Agent
from acceptmon.export import render
from acceptmon.findings_json import finding_json
from acceptmon.health import checkpoint_metrics, finding_metrics, notify_metrics, source_metrics
from acceptmon.runstate import run_to_dict
from acceptmon.server import HttpServer, json_route, metrics_route

log = logging.getLogger("acceptmon.daemon")


def _metrics(agent: Agent) -> str:
    def extras() -> Any:
        yield from source_metrics(agent.health())
        yield from checkpoint_metrics(
            agent.checkpoint_age(), agent.checkpoint_errors, agent.checkpoint_discarded
        )
        yield from finding_metrics(agent.findings, agent.raised)
        if agent.notify_worker is not None:
            from acceptmon.notify import OUTCOMES

            yield from notify_metrics(agent.notify_worker.notifier.stats(), OUTCOMES)

    with agent.lock:
        return render(agent.pipeline.store, [extras])


def _runs(agent: Agent) -> list[dict[str, Any]]:
    out = []
    for source in sorted({*agent.sources, *agent.tracker.sources()}):
        saved = agent.snapshots.load(source)
        known = {r["run_id"] for r in saved}
        live = [run_to_dict(r) for r in agent.tracker.runs(source) if r.run_id not in known]
        out += saved + live
    return out


def serve(agent: Agent) -> HttpServer:
    host, port = agent.config.listen_addr()
    routes = {
        "/metrics": metrics_route(lambda: _metrics(agent)),
        "/healthz": lambda: ("text/plain", b"ok\n"),
        "/api/findings": json_route(lambda: [finding_json(f) for f in agent.findings]),
        "/api/runs": json_route(lambda: _runs(agent)),
    }
    server = HttpServer(host, port, routes)
    server.start()
    log.info("serving /metrics on http://%s:%d", host, server.port)
    return server


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
    if not cfg.sources:
        raise config_mod.ConfigError(["no sources: name log files on the command line or under 'sources:'"])
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
    # Serve first: opening is quick (the backlog is read by agent.run), but /healthz
    # and /metrics must answer from the start.
    server = serve(agent)
    try:
        agent.open()
    except BaseException:
        server.stop()
        raise
    watcher = _watch(agent)
    agent.reload_requested = lambda: _reload(agent, path, sources, overrides)  # type: ignore[method-assign]
    try:
        agent.run(stop, reload)
    finally:
        agent.close()
        if watcher is not None:
            watcher.stop()
        server.stop()
    log.info("stopped cleanly")
    return 0


def _reload(agent: Agent, path: str | None, sources: list[str], overrides: dict[str, Any]) -> None:
    """SIGHUP: re-read the config; keep unchanged sources (and their positions)."""
    try:
        cfg = config_mod.load(path, sources, overrides)
    except config_mod.ConfigError as exc:
        log.error("reload refused, keeping the running configuration:\n%s", exc)
        return
    agent.save_checkpoint()
    agent.reconfigure(cfg)
    log.info("configuration reloaded: %d sources", len(cfg.sources))
