"""A Slack incoming-webhook imitation on 127.0.0.1 with scripted failures.

Each request takes the next mode from ``script`` (then ``default``):

- ``ok``: 200 ``ok`` — the only mode that counts as delivered
- ``429:N``: 429 ``rate_limited`` with ``Retry-After: N``
- ``500``: 500 ``internal_error``
- ``400`` / ``403`` / ``404`` / ``410``: Slack's permanent errors
  (``invalid_payload``, ``invalid_token``, ``channel_not_found``, ``channel_is_archived``)
- ``slow``: hold the response past any sane client timeout, then 503
- ``drop``: read the request and close the connection without answering
- ``trickle``: a status line, then one header byte every ``trickle_s`` seconds, never finishing

Requests to any path but the secret one get 404 ``no_service``, as Slack does.
"""

from __future__ import annotations

import json
import re
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PERMANENT = {
    "400": "invalid_payload",
    "403": "invalid_token",
    "404": "channel_not_found",
    "410": "channel_is_archived",
}
_KEY_RE = re.compile(r"key `([^`]+)`")


@dataclass
class Received:
    at: float  # time.monotonic() when the request was read
    mode: str
    body: dict[str, Any] | None
    headers: dict[str, str]

    @property
    def delivered(self) -> bool:
        return self.mode == "ok"

    @property
    def finding_key(self) -> str | None:
        """The finding key from the message's context line (Slack) or JSON (webhook)."""
        if not self.body:
            return None
        if "key" in self.body:
            return str(self.body["key"])
        match = _KEY_RE.search(json.dumps(self.body, ensure_ascii=False))
        return match.group(1) if match else None


class FakeSlack:
    def __init__(self, slow_s: float = 5.0) -> None:
        self.token = secrets.token_hex(12)
        self.path = f"/services/T0FAKE/B0FAKE/{self.token}"
        self.slow_s = slow_s
        self.trickle_s = 2.0
        self.default = "ok"
        self.script: deque[str] = deque()
        self.requests: list[Received] = []
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._server.block_on_close = False
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}{self.path}"

    def __enter__(self) -> FakeSlack:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()

    def plan(self, *modes: str, default: str | None = None) -> None:
        with self._lock:
            self.script.extend(modes)
            if default is not None:
                self.default = default

    def delivered_keys(self) -> list[str]:
        with self._lock:
            return [str(r.finding_key) for r in self.requests if r.delivered]

    def count(self) -> int:
        with self._lock:
            return len(self.requests)

    def wait_until(self, predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return True
            self._closing.wait(0.02)
        return predicate()

    def _next_mode(self, path: str, body: dict[str, Any] | None, headers: dict[str, str]) -> str:
        with self._lock:
            mode = self.script.popleft() if self.script else self.default
            if path != self.path:
                mode = "no_service"
            elif mode == "ok" and not (body and (body.get("text") or body.get("attachments"))):
                mode = "400"  # Slack: no_text / invalid_payload (Alertmanager sends attachments only)
            self.requests.append(Received(time.monotonic(), mode, body, headers))
            return mode


def _reply(mode: str) -> tuple[int, str, dict[str, str]]:
    """Status, body and extra headers Slack would send for ``mode``."""
    if mode.startswith("429:"):
        return 429, "rate_limited", {"Retry-After": mode[4:]}
    if mode in PERMANENT:
        return int(mode), PERMANENT[mode], {}
    replies = {"no_service": (404, "no_service"), "500": (500, "internal_error"), "slow": (503, "timeout")}
    status, text = replies.get(mode, (200, "ok"))
    return status, text, {}


def _handler(fake: FakeSlack) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
            mode = fake._next_mode(self.path, body, dict(self.headers.items()))
            if mode == "drop":
                self.close_connection = True
                return
            if mode == "slow" and fake._closing.wait(fake.slow_s):
                return
            if mode == "trickle":
                self._trickle()
                return
            self._answer(mode)

        def _trickle(self) -> None:
            """A status line, then one header byte every ``trickle_s`` until closed: a socket
            timeout is reset by every byte, only a whole-request deadline ends it."""
            try:
                self.wfile.write(b"HTTP/1.1 200 OK\r\nX-Trickle: ")
                self.wfile.flush()
                while not fake._closing.wait(fake.trickle_s):
                    self.wfile.write(b"a")
                    self.wfile.flush()
            except OSError:
                pass

        def _answer(self, mode: str) -> None:
            status, text, extra = _reply(mode)
            data = text.encode()
            try:
                self.send_response(status)
                for name, value in {"Content-Type": "text/plain", **extra}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except OSError:
                pass  # the client gave up (timeout); that is the point of "slow"

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output free of request lines (they contain the secret path)

    return Handler
