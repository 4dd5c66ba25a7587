"""``acceptmon run``: the agent plus its HTTP server, signals and reloads."""

from __future__ import annotations

import contextlib
import errno
import ipaddress
import logging
import os
import signal
import ssl
import threading
from typing import Any

from acceptmon import settings as config_mod
from acceptmon.apps.agent import api, startup
from acceptmon.apps.agent.agent import Agent
from acceptmon.apps.agent.web.server import (
    ConnectionStats,
    HttpServer,
)
from acceptmon.notify.settings import NotifySettingsError

log = logging.getLogger("acceptmon.agent.daemon")


def serve(agent: Agent, cfg: config_mod.Settings | None = None) -> HttpServer:
    """Bind and start the HTTP server for ``cfg`` (default: the agent's); OSError if it cannot bind."""
    cfg = cfg or agent.settings
    host, port = cfg.listen_addr()
    web = cfg.web
    stats = ConnectionStats()
    routes, prefixes, queries = api.routes(agent, stats)
    try:
        server = HttpServer(
            host, port, routes, web, stats=stats, prefix_routes=prefixes, query_routes=queries
        )
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


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name: assume it resolves to a reachable address


def watch_dirs(agent: Agent) -> list[str]:
    """Directories whose file events should wake the loop."""
    dirs: set[str] = {os.path.dirname(os.path.abspath(p)) for p in agent.watched.paths()}
    for _, source in agent.sources.values():
        watch = getattr(source, "watch_dirs", None)
        if watch is not None:
            dirs.update(watch())
    return sorted(dirs)


def _watch(agent: Agent) -> Any:
    """Wake the loop on file events (watchdog); polling stays the backstop."""
    from acceptmon.sources.watch import DirectoryWatcher

    watcher = DirectoryWatcher(agent.waker, events=agent.events)
    if not watcher.start():
        return None
    for directory in watch_dirs(agent):
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
    try:
        agent.run(stop, reload, lambda: _reload(agent, path, sources, overrides, http, watcher))
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
        _reload_done(agent, False)
        return
    server, bound = _rebind(agent, cfg, http[0])
    if not bound:
        http[0] = server
        _reload_done(agent, False)
        return
    agent.save_checkpoint()
    try:
        agent.reconfigure(cfg)
    except NotifySettingsError as exc:  # a webhook file or variable changed since the load
        log.error("reload refused, keeping the running settings:\n%s", config_mod.SettingsError(exc.problems))
        _back_to(agent, http, server)
        return
    except Exception as exc:  # a file changed between the checks and the build: nothing changed
        log.error(
            "reload refused, keeping the running settings: %s; run check-config and reload again",
            type(exc).__name__,
        )
        _back_to(agent, http, server)
        return
    if server is not http[0]:
        http[0].stop()
        http[0] = server
    if watcher is not None:
        for directory in watch_dirs(agent):
            watcher.add(directory)
    _reload_done(agent, True)
    log.info("settings reloaded: %d sources", len(cfg.sources))


def _reload_done(agent: Agent, ok: bool) -> None:
    """Record a reload's outcome for ``acceptmon_config_last_reload_*``."""
    agent.reload_ok = ok
    if ok:
        agent.reload_at = agent.clock.now()


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
    _reload_done(agent, False)
    if new is http[0]:
        return
    new.stop()
    with contextlib.suppress(OSError):  # still bound: the old server never stopped
        http[0] = serve(agent)


def _http_settings(cfg: config_mod.Settings) -> tuple[Any, ...]:
    """What the HTTP server is built from; a change means a new server."""
    return (cfg.listen, getattr(cfg, "web_config_file", None))
