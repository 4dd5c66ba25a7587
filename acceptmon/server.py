"""The agent's HTTP face: /metrics, /healthz, /api/findings, /api/runs.

Handlers only read snapshots the agent hands over through callables, so a
slow scrape never holds up ingestion and the server has no state of its own.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

from prometheus_client import CONTENT_TYPE_LATEST

log = logging.getLogger("acceptmon.server")


class HttpError(Exception):
    """Raised by a route to answer with another status (e.g. 503 from /healthz)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


Routes = dict[str, Callable[[], tuple[str, bytes]]]


def json_route(produce: Callable[[], Any]) -> Callable[[], tuple[str, bytes]]:
    def route() -> tuple[str, bytes]:
        return "application/json", json.dumps(produce(), indent=1, default=str, allow_nan=False).encode()

    return route


def metrics_route(render: Callable[[], str]) -> Callable[[], tuple[str, bytes]]:
    def route() -> tuple[str, bytes]:
        return CONTENT_TYPE_LATEST, render().encode()

    return route


class _Handler(BaseHTTPRequestHandler):
    routes: ClassVar[Routes] = {}
    server_version = "acceptmon"

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/") or "/"
        route = self.routes.get(path)
        if route is None:
            self._send(404, "text/plain", b"not found; try /metrics, /healthz, /api/findings, /api/runs\n")
            return
        try:
            ctype, body = route()
        except HttpError as exc:
            self._send(exc.code, "text/plain", exc.message.encode())
            return
        except Exception:  # a broken producer must not kill the server thread
            log.exception("handler for %s failed", path)
            self._send(500, "text/plain", b"internal error\n")
            return
        self._send(200, ctype, body)

    def _send(self, code: int, ctype: str, body: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s %s", self.address_string(), format % args)


class HttpServer:
    """A threaded HTTP server on its own daemon thread."""

    def __init__(self, host: str, port: int, routes: Routes) -> None:
        handler = type("Handler", (_Handler,), {"routes": routes})
        self._httpd = ThreadingHTTPServer((host, port), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="http", daemon=True)

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
