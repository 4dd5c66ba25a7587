"""The agent's HTTP face: /metrics, /healthz, /api/findings, /api/runs[/<run_id>], /api/verdict.

Handlers only read snapshots the agent hands over through callables, so a
slow scrape never holds up ingestion and the server has no state of its own.

No peer can stall it: one reactor thread accepts connections, completes TLS
handshakes and reads request heads without blocking, so an idle or slowloris
connection costs a descriptor, never a thread, and is dropped when its
deadline passes. Only a complete request head reaches the fixed pool of
worker threads, through the bounded lanes of ``admission`` (503 when full):
verified scrapes go first and keep a worker of their own, so a flood of wrong
passwords or of /healthz probes cannot starve them. A wrong password sent
again is refused from a cache, and a client guessing new ones is throttled
(429) before it costs more bcrypt checks. Past the connection
bound the oldest idle connection is closed to make room for the new one, and
when ``accept`` runs out of descriptors the listener pauses with a backoff
instead of spinning. Every dropped connection is counted by reason.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import selectors
import socket
import ssl
import threading
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from http import HTTPStatus
from urllib.parse import unquote

from acceptmon.apps.agent.web.admission import Lane, Lanes, Throttle
from acceptmon.apps.agent.web.request import Request, credentials, parse
from acceptmon.apps.agent.web.routes import HttpError, PrefixRoutes, QueryRoutes, Routes
from acceptmon.settings.web import BasicAuth, TlsContext, WebSettings

log = logging.getLogger("acceptmon.agent.http")


#: Why a connection was closed before (or instead of) being answered.
REJECT_REASONS = (
    "limit",  # past max_connections: the oldest idle connection made room
    "overloaded",  # every worker busy and the queue full: 503
    "head_timeout",  # no complete TLS handshake + request head in time
    "write_timeout",  # the peer did not read the response in time
    "tls_error",  # failed handshake (plain HTTP on the TLS port, unknown client CA, ...)
    "fd_exhausted",  # accept() hit the descriptor limit; an idle connection was closed
    "bad_request",  # oversized or malformed request head
    "auth_throttled",  # a client past its rate of bcrypt checks: 429, no check run
)
#: How long a connection refused at the TLS handshake is read (and dropped) before it is closed.
LINGER_S = 1.0
_FD_ERRNOS = {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM}
_CLOSE_503 = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nRetry-After: 1\r\nConnection: close\r\n\r\n"
)
_CLOSE_431 = b"HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


@dataclass(frozen=True, slots=True)
class Limits:
    """Bounds that keep threads and descriptors finite (the unit allows TasksMax=256)."""

    max_connections: int = 128
    workers: int = 4
    queue: int = 16
    head_timeout: float = 10.0  # TLS handshake + request head, from accept or the first byte
    idle_timeout: float = 30.0  # a kept-alive connection waiting for its next request
    write_timeout: float = 10.0
    max_head: int = 16384
    #: bcrypt checks a client address may start per second (and at once): only credentials
    #: not yet known good or bad cost one, so verified scrapers are never throttled.
    auth_rate: float = 5.0
    auth_burst: float = 10.0


@dataclass
class ConnectionStats:
    """Counters the reactor and workers update and /metrics reads."""

    rejected: dict[str, int] = field(default_factory=lambda: dict.fromkeys(REJECT_REASONS, 0))
    open: int = 0
    #: Changed certificate/key files that could not be loaded (the old ones stay in use).
    tls_reload_errors: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def tls_reload_failed(self) -> None:
        with self._lock:
            self.tls_reload_errors += 1

    def count(self, reason: str) -> None:
        with self._lock:
            self.rejected[reason] += 1

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self.rejected)


@dataclass(eq=False)
class _Conn:
    sock: socket.socket
    fd: int
    deadline: float
    since: float
    buf: bytearray = field(default_factory=bytearray)
    handshaking: bool = False
    busy: bool = False  # owned by a worker; the reactor leaves it alone
    keep: bool = False  # set by the worker: serve another request on it
    fresh: bool = True  # no byte of the current request head seen yet
    served: int = 0  # requests answered on this connection
    client: str = ""  # the peer's address, for the auth throttle
    request: Request = field(default_factory=Request)
    lingering: bool = False  # refused at the handshake: reading what the peer still sends, then closing


class HttpServer:
    """A reactor thread plus a fixed pool of worker threads; bound at construction."""

    def __init__(
        self,
        host: str,
        port: int,
        routes: Routes,
        web: WebSettings | None = None,
        *,
        limits: Limits = Limits(),
        stats: ConnectionStats | None = None,
        open_paths: Iterable[str] = ("/healthz",),
        prefix_routes: PrefixRoutes | None = None,
        query_routes: QueryRoutes | None = None,
    ) -> None:
        self.routes = routes
        self.prefix_routes = prefix_routes or {}
        self.query_routes = query_routes or {}
        self.limits = limits
        self.stats = stats or ConnectionStats()
        self._open_paths = frozenset(open_paths)
        self._tls = TlsContext(web.tls, self.stats.tls_reload_failed) if web and web.tls else None
        self._auth = BasicAuth(web.users) if web and web.users else None
        self._headers = web.headers if web else ()
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._listener = socket.create_server((host, port), family=family, backlog=128)
        self._listener.setblocking(False)
        self._sel = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._sel.register(self._listener, selectors.EVENT_READ, "listen")
        self._sel.register(self._wake_r, selectors.EVENT_READ, "wake")
        self._conns: dict[int, _Conn] = {}
        self._returned: deque[_Conn] = deque()
        self._work: Lanes[_Conn] = Lanes(limits.workers, limits.queue)
        self._throttle = Throttle(limits.auth_rate, limits.auth_burst)
        self._stopping = False
        self._paused_until = 0.0
        self._backoff = 0.0
        self._fd_logged = -60.0
        self._thread = threading.Thread(target=self._reactor, name="http", daemon=True)
        self._workers = [
            threading.Thread(target=self._worker, name=f"http-worker-{i}", daemon=True)
            for i in range(limits.workers)
        ]

    @property
    def port(self) -> int:
        return int(self._listener.getsockname()[1])

    @property
    def tls(self) -> bool:
        return self._tls is not None

    def start(self) -> None:
        self._thread.start()
        for w in self._workers:
            w.start()

    def stop(self) -> None:
        self._stopping = True
        self._wake()
        if self._thread.is_alive():
            self._thread.join(5)
        for conn in self._work.close():
            conn.sock.close()  # queued, never to be served
        for w in self._workers:
            if w.is_alive():
                w.join(self.limits.write_timeout)
        self._wake_w.close()

    # ---- reactor -------------------------------------------------------------------------

    def _wake(self) -> None:
        with contextlib.suppress(OSError):  # a full wake pipe already wakes the reactor
            self._wake_w.send(b"x")

    def _reactor(self) -> None:
        try:
            while not self._stopping:
                now = time.monotonic()
                for key, mask in self._sel.select(self._timeout(now)):
                    if key.data == "listen":
                        self._accept()
                    elif key.data == "wake":
                        self._drain_wake()
                    else:
                        self._event(key.data, mask)
                self._housekeeping(time.monotonic())
        except Exception:  # never let the HTTP face die silently
            log.exception("HTTP reactor failed")
        finally:
            for conn in list(self._conns.values()):
                if not conn.busy:
                    self._close(conn)
            self._sel.close()
            self._listener.close()
            self._wake_r.close()

    def _event(self, conn: _Conn, mask: int) -> None:
        try:
            self._readable(conn, mask)
        except Exception:  # one connection's surprise must not take the listener down
            log.exception("HTTP connection handling failed; closing it")
            self._close(conn)

    def _timeout(self, now: float) -> float:
        soonest = now + 1.0
        if self._paused_until:
            soonest = min(soonest, self._paused_until)
        for conn in self._conns.values():
            if not conn.busy:
                soonest = min(soonest, conn.deadline)
        return max(0.0, soonest - now)

    def _housekeeping(self, now: float) -> None:
        if self._paused_until and now >= self._paused_until:
            self._paused_until = 0.0
            self._sel.register(self._listener, selectors.EVENT_READ, "listen")
        for conn in [c for c in self._conns.values() if not c.busy and c.deadline <= now]:
            # An expired keep-alive wait, or the end of a linger, is no rejection.
            if not ((conn.fresh and conn.served) or conn.lingering):
                self.stats.count("head_timeout")
            self._close(conn)

    def _accept(self) -> None:
        for _ in range(64):  # then let the other connections have a turn
            try:
                sock, addr = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                if exc.errno in _FD_ERRNOS:
                    self._out_of_descriptors()
                    return
                log.debug("accept failed: %s", exc)
                return
            self._backoff = 0.0
            self._admit(sock, str(addr[0]))

    def _out_of_descriptors(self) -> None:
        """Close the oldest idle connection and pause accepting, rather than spin on EMFILE."""
        self.stats.count("fd_exhausted")
        now = time.monotonic()
        if now - self._fd_logged >= 60:  # once a minute at most: an attack must not flood the journal
            self._fd_logged = now
            log.warning("out of file descriptors: closing idle HTTP connections, pausing accept()")
        victim = self._oldest_idle()
        if victim is not None:
            self._close(victim)
        self._backoff = min(1.0, max(0.05, self._backoff * 2))
        self._paused_until = now + self._backoff
        self._sel.unregister(self._listener)

    def _oldest_idle(self) -> _Conn | None:
        idle = [c for c in self._conns.values() if not c.busy]
        return min(idle, key=lambda c: c.since) if idle else None

    def _admit(self, sock: socket.socket, client: str) -> None:
        if len(self._conns) >= self.limits.max_connections:
            victim = self._oldest_idle()
            self.stats.count("limit")
            if victim is None:
                sock.close()
                return
            self._close(victim)
        now = time.monotonic()
        try:
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self._tls is not None:
                sock = self._tls.get().wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        except (OSError, ValueError):
            sock.close()
            self.stats.count("tls_error")
            return
        deadline = now + self.limits.head_timeout
        conn = _Conn(sock, sock.fileno(), deadline, now, handshaking=self._tls is not None, client=client)
        self._conns[conn.fd] = conn
        self.stats.open = len(self._conns)
        self._sel.register(sock, selectors.EVENT_READ, conn)

    def _close(self, conn: _Conn) -> None:
        if self._conns.get(conn.fd) is conn:
            del self._conns[conn.fd]
            if not conn.busy:
                with contextlib.suppress(KeyError, ValueError):
                    self._sel.unregister(conn.fd)
        conn.sock.close()
        self.stats.open = len(self._conns)

    def _want(self, conn: _Conn, events: int) -> None:
        self._sel.modify(conn.sock, events, conn)

    def _linger(self, conn: _Conn) -> None:
        """Close a connection refused at the handshake without resetting it.

        A TLS 1.3 client sends its request as soon as its part of the handshake
        is done; closed with that request unread, the socket answers with a reset
        that overtakes our alert, and the client (Prometheus) reports "connection
        reset" instead of "certificate required". So stop writing (the alert has
        gone out), read and drop what the peer sends until it hangs up, and close
        after ``LINGER_S`` at the latest.
        """
        with contextlib.suppress(KeyError, ValueError):
            self._sel.unregister(conn.fd)
        try:
            raw = socket.socket(fileno=conn.sock.detach())
            raw.shutdown(socket.SHUT_WR)
        except OSError:
            self._close(conn)
            return
        conn.sock, conn.lingering = raw, True
        conn.deadline = time.monotonic() + LINGER_S
        self._sel.register(raw, selectors.EVENT_READ, conn)

    def _drop_input(self, conn: _Conn) -> None:
        try:
            data = conn.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self._close(conn)

    def _readable(self, conn: _Conn, mask: int) -> None:
        sock = conn.sock
        if conn.lingering:
            self._drop_input(conn)
            return
        if conn.handshaking:
            assert isinstance(sock, ssl.SSLSocket)
            try:
                sock.do_handshake()
            except ssl.SSLWantReadError:
                self._want(conn, selectors.EVENT_READ)
                return
            except ssl.SSLWantWriteError:
                self._want(conn, selectors.EVENT_WRITE)
                return
            except (OSError, ValueError) as exc:
                log.debug("TLS handshake failed: %s", exc)
                self.stats.count("tls_error")
                self._linger(conn)
                return
            conn.handshaking = False
            if mask & selectors.EVENT_WRITE:
                self._want(conn, selectors.EVENT_READ)
        while True:
            try:
                data = sock.recv(65536)
            except (ssl.SSLWantReadError, BlockingIOError, InterruptedError):
                break
            except ssl.SSLWantWriteError:
                self._want(conn, selectors.EVENT_READ | selectors.EVENT_WRITE)
                return
            except (OSError, ValueError):
                self._close(conn)
                return
            if not data:
                self._close(conn)  # the peer hung up
                return
            if conn.fresh:
                conn.fresh = False
                conn.deadline = min(conn.deadline, time.monotonic() + self.limits.head_timeout)
            conn.buf += data
            if (
                len(conn.buf) > self.limits.max_head
                or not isinstance(sock, ssl.SSLSocket)
                or not sock.pending()
            ):
                break
        self._maybe_dispatch(conn)

    def _maybe_dispatch(self, conn: _Conn) -> None:
        while conn.buf[:2] == b"\r\n":  # RFC 9112: ignore empty lines before a request
            del conn.buf[:2]
        if b"\r\n\r\n" not in conn.buf:
            if len(conn.buf) > self.limits.max_head:
                self.stats.count("bad_request")
                self._reply_and_close(conn, _CLOSE_431)
            return
        end = conn.buf.index(b"\r\n\r\n")
        conn.request = parse(bytes(conn.buf[:end]))
        del conn.buf[: end + 4]
        lane = self._classify(conn.request, conn.client)
        self._sel.unregister(conn.sock)
        conn.busy = True
        if not self._work.offer(conn, lane):
            conn.busy = False
            self._sel.register(conn.sock, selectors.EVENT_READ, conn)
            self.stats.count("overloaded")
            self._reply_and_close(conn, _CLOSE_503)

    def _classify(self, req: Request, client: str) -> Lane:
        """The request's lane, and whether its credentials still need a bcrypt check.

        Runs in the reactor, so it must stay cheap: a header parse and a SHA-256.
        """
        if req.headers is None:
            return "untrusted"
        if req.path in self._open_paths or self._auth is None:
            req.auth = "ok"
            return "probe" if req.path in self._open_paths else "trusted"
        creds = credentials(req.headers)
        known = self._auth.cached(*creds) if creds is not None else False
        if known:
            req.auth = "ok"
            return "trusted"
        if known is None and creds is not None:
            req.credentials = creds
            req.auth = "verify" if self._throttle.allow(client) else "throttled"
        return "untrusted"

    def _reply_and_close(self, conn: _Conn, reply: bytes) -> None:
        with contextlib.suppress(OSError, ValueError):
            conn.sock.send(reply)  # best effort: non-blocking, one try
        self._close(conn)

    def _drain_wake(self) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except (BlockingIOError, InterruptedError):
            pass
        while self._returned:
            conn = self._returned.popleft()
            conn.busy = False
            if not conn.keep or self._stopping:
                self._close(conn)
                continue
            now = time.monotonic()
            conn.since, conn.fresh = now, not conn.buf
            conn.deadline = now + (self.limits.idle_timeout if conn.fresh else self.limits.head_timeout)
            try:
                conn.sock.setblocking(False)
                self._sel.register(conn.sock, selectors.EVENT_READ, conn)
            except (OSError, ValueError, KeyError):
                self._close(conn)
                continue
            self._event(conn, 0)  # bytes may already wait in the buffer or the TLS layer

    # ---- workers -------------------------------------------------------------------------

    def _worker(self) -> None:
        while True:
            taken = self._work.take()
            if taken is None:
                return
            conn, lane = taken
            conn.keep = False
            try:
                self._serve(conn)
            except TimeoutError:
                self.stats.count("write_timeout")
            except (OSError, ValueError):
                pass  # the peer went away mid-response
            except Exception:  # a bug must not cost a worker thread
                log.exception("HTTP worker failed")
            finally:
                self._work.done(lane)
            if self._stopping:
                conn.sock.close()
                continue
            self._returned.append(conn)
            self._wake()

    def _serve(self, conn: _Conn) -> None:
        req = conn.request
        headers = req.headers
        deadline = time.monotonic() + self.limits.write_timeout
        if headers is None:
            self.stats.count("bad_request")
            self._send(conn, deadline, HTTPStatus.BAD_REQUEST, "text/plain", b"bad request\n", False)
            return
        method, version = req.method, req.version
        connection = (headers.get("Connection") or "").lower()
        keep = "close" not in connection if version == "HTTP/1.1" else "keep-alive" in connection
        if headers.get("Content-Length", "0").strip() not in ("", "0") or headers.get("Transfer-Encoding"):
            keep = False  # requests here have no body; do not try to find the next request after one
        status, ctype, body, extra = self._route(req)
        self._send(conn, deadline, status, ctype, b"" if method == "HEAD" else body, keep, extra, len(body))
        conn.keep = keep
        conn.served += 1

    def _route(self, req: Request) -> tuple[HTTPStatus, str, bytes, list[tuple[str, str]]]:
        path = req.path
        if req.auth == "throttled":
            self.stats.count("auth_throttled")
            msg = b"too many authentication attempts; retry later\n"
            return HTTPStatus.TOO_MANY_REQUESTS, "text/plain", msg, [("Retry-After", "1")]
        if req.auth == "denied" or (
            req.auth == "verify" and not (self._auth is not None and self._auth.check(*req.credentials))
        ):
            return HTTPStatus.UNAUTHORIZED, "text/plain", b"Unauthorized\n", [("WWW-Authenticate", "Basic")]
        if req.method not in ("GET", "HEAD"):
            return (
                HTTPStatus.METHOD_NOT_ALLOWED,
                "text/plain",
                b"method not allowed\n",
                [("Allow", "GET, HEAD")],
            )
        route = self.routes.get(path)
        if route is None and path in self.query_routes:
            query, by_query = req.query, self.query_routes[path]
            route = lambda: by_query(query)  # noqa: E731 - binds the query
        if route is None:
            prefix = next((p for p in self.prefix_routes if path.startswith(p) and len(path) > len(p)), None)
            if prefix is not None:
                # A path segment is percent-encoded (a run id may hold any character).
                rest, handler = unquote(path[len(prefix) :]), self.prefix_routes[prefix]
                route = lambda: handler(rest)  # noqa: E731 - binds the rest of the path
        if route is None:
            msg = b"not found; try /metrics, /healthz, /api/findings, /api/runs, /api/verdict\n"
            return HTTPStatus.NOT_FOUND, "text/plain", msg, []
        try:
            ctype, body = route()
        except HttpError as exc:
            return HTTPStatus(exc.code), "text/plain", exc.message.encode(), []
        except Exception:  # a broken producer must not kill the worker
            log.exception("handler for %s failed", path)
            return HTTPStatus.INTERNAL_SERVER_ERROR, "text/plain", b"internal error\n", []
        return HTTPStatus.OK, ctype, body, []

    def _send(
        self,
        conn: _Conn,
        deadline: float,
        status: HTTPStatus,
        ctype: str,
        body: bytes,
        keep: bool,
        extra: list[tuple[str, str]] | None = None,
        length: int | None = None,
    ) -> None:
        lines = [
            f"HTTP/1.1 {status.value} {status.phrase}",
            f"Content-Type: {ctype}",
            f"Content-Length: {len(body) if length is None else length}",
            "Server: acceptmon",
            *(f"{k}: {v}" for k, v in [*self._headers, *(extra or [])]),
        ]
        if not keep:
            lines.append("Connection: close")
        data = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body
        view = memoryview(data)
        while view:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            conn.sock.settimeout(remaining)
            sent = conn.sock.send(view[:65536])
            view = view[sent:]
