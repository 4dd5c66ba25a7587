"""One HTTP POST, and what its outcome means for retrying.

``http.client`` rather than ``urllib.request``: no redirects (a redirect would
carry the secret URL somewhere else), no proxy surprises, and every failure
comes back as a ``Response`` with scrubbed text instead of an exception whose
message or attributes might hold the URL.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import socket
import ssl
import threading
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Literal, Protocol
from urllib.parse import unquote, urlsplit

from acceptmon import __version__
from acceptmon.notify.secret import Secret

Verdict = Literal["sent", "retry", "permanent"]

#: Statuses worth retrying: timeouts, rate limits and server trouble.
_RETRY_STATUSES = {408, 425, 429}
_MAX_DETAIL = 200


@dataclass(frozen=True, slots=True)
class Response:
    """``status`` is None when no HTTP response arrived (refused, dropped, timed out)."""

    status: int | None
    detail: str
    retry_after: str | None = None


class Transport(Protocol):
    def post(self, body: bytes, delivery_id: str) -> Response: ...


def classify(response: Response) -> Verdict:
    """Slack answers 400/403/404/410 for payload, token and channel problems: retrying cannot help."""
    status = response.status
    if status is None or status in _RETRY_STATUSES or status >= 500:
        return "retry"
    if 200 <= status < 300:
        return "sent"
    return "permanent"


def parse_retry_after(value: str | None, now: float) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or HTTP date)."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        return max(parsedate_to_datetime(text).timestamp() - now, 0.0)
    except (TypeError, ValueError, IndexError):
        return None


class HttpTransport:
    """POSTs JSON to a secret URL within a deadline; never raises, never leaks the URL.

    ``timeout_s`` bounds the whole request, not each socket read: a receiver
    trickling a byte at a time would reset a socket timeout forever. When the
    deadline passes, the connection is shut down under the reading thread.
    """

    def __init__(self, url: Secret, timeout_s: float, bearer: Secret | None = None) -> None:
        """``bearer`` adds ``Authorization: Bearer …`` (Grafana's API token)."""
        self._url = url
        self._timeout = timeout_s
        self._bearer = bearer

    def post(self, body: bytes, delivery_id: str) -> Response:
        return self.request("POST", body, delivery_id)

    def request(self, method: str, body: bytes, delivery_id: str, query: str = "") -> Response:
        """One request to the URL (``query`` replaces its query string); never raises."""
        try:
            return self._request(method, body, delivery_id, query)
        except Exception as exc:  # any failure is "no response"; the text is all we keep
            return Response(None, self._scrub(f"{type(exc).__name__}: {exc}")[:_MAX_DETAIL])

    def _scrub(self, text: str) -> str:
        text = self._url.scrub(text)
        return self._bearer.scrub(text) if self._bearer is not None else text

    def _request(self, method: str, body: bytes, delivery_id: str, query: str) -> Response:
        parts = urlsplit(self._url.reveal())
        conn: http.client.HTTPConnection
        if parts.scheme == "https":
            context = ssl.create_default_context()
            conn = http.client.HTTPSConnection(
                parts.hostname or "", parts.port, timeout=self._timeout, context=context
            )
        else:
            conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=self._timeout)
        headers = {
            "Content-Type": "application/json; charset=utf-8",
            "User-Agent": f"acceptmon/{__version__}",
            "Idempotency-Key": delivery_id,
        }
        if self._bearer is not None:
            headers["Authorization"] = f"Bearer {self._bearer.reveal()}"
        elif (
            parts.username is not None
        ):  # http.client ignores a URL's user:password@ (Alertmanager behind basic auth)
            pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
            headers["Authorization"] = f"Basic {base64.b64encode(pair).decode('ascii')}"
        query = query or parts.query
        target = parts.path + (f"?{query}" if query else "")
        expired = threading.Event()

        def cut() -> None:
            expired.set()
            with contextlib.suppress(OSError, AttributeError):
                conn.sock.shutdown(socket.SHUT_RDWR)  # wakes a blocked read

        timer = threading.Timer(self._timeout, cut)
        timer.daemon = True
        timer.start()
        try:
            conn.request(method, target or "/", body=body if method == "POST" else None, headers=headers)
            resp = conn.getresponse()
            text = resp.read(4096).decode("utf-8", "replace").strip()
            if expired.is_set():
                return Response(None, f"no complete response within {self._timeout:g} s")
            detail = self._scrub(" ".join(text.split()))[:_MAX_DETAIL] or resp.reason
            return Response(resp.status, detail, resp.getheader("Retry-After"))
        except Exception:
            if expired.is_set():
                return Response(None, f"no complete response within {self._timeout:g} s")
            raise
        finally:
            timer.cancel()
            conn.close()
