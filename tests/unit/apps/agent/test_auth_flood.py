"""Unauthenticated floods cannot starve verified scrapes (issue 19, items 6 and 16).

In-process servers whose bcrypt check or /healthz handler is held on an event,
so "every worker is busy" is a fact of the test, not a race against the CPU.
"""

from __future__ import annotations

import base64
import http.client
import socket
import threading
from collections.abc import Callable
from typing import Any

import bcrypt
import pytest

from acceptmon.apps.agent.web.admission import Lanes, Throttle
from acceptmon.apps.agent.web.routes import Routes
from acceptmon.apps.agent.web.server import HttpServer
from acceptmon.settings.web import BasicAuth, WebSettings
from tests.support.wait import wait_for

HASH = bcrypt.hashpw(b"pw", bcrypt.gensalt(4)).decode()
WEB = WebSettings(users={"prom": HASH})


class HeldBcrypt:
    """Stands in for the bcrypt module: counts checks and can hold them until released."""

    def __init__(self) -> None:
        self.calls = 0
        self.held = threading.Event()
        self.held.set()
        self._lock = threading.Lock()

    def checkpw(self, password: bytes, hashed: bytes) -> bool:
        with self._lock:
            self.calls += 1
        self.held.wait(10)
        return bool(bcrypt.checkpw(password, hashed))


def held_bcrypt(server: HttpServer, monkeypatch: pytest.MonkeyPatch) -> HeldBcrypt:
    fake = HeldBcrypt()
    assert isinstance(server._auth, BasicAuth)
    monkeypatch.setattr(server._auth, "_bcrypt", fake)  # the module's one use: checkpw
    return fake


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def request(port: int, path: str, authorization: str | bytes | None = None) -> tuple[int, bytes]:
    """One request on a fresh connection: (status, body); status 0 if the server hung up."""
    head = f"GET {path} HTTP/1.1\r\nHost: x\r\n".encode()
    if authorization is not None:
        value = authorization if isinstance(authorization, bytes) else authorization.encode()
        head += b"Authorization: " + value + b"\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(head + b"Connection: close\r\n\r\n")
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    if not data:
        return 0, b""
    status = int(data.split(b" ", 2)[1])
    return status, data.partition(b"\r\n\r\n")[2]


ROUTES: Routes = {
    "/metrics": lambda: ("text/plain", b"acceptmon_up 1\n"),
    "/healthz": lambda: ("text/plain", b"ok\n"),
}


def in_flight(port: int, count: int, path: str, auth: Callable[[int], str | None]) -> list[socket.socket]:
    """``count`` requests sent and left waiting for their answers."""
    out = []
    for i in range(count):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        value = auth(i)
        line = f"Authorization: {value}\r\n" if value else ""
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n{line}\r\n".encode())
        out.append(s)
    return out


def test_a_non_ascii_authorization_header_gets_401_not_a_closed_connection(
    start: Callable[..., HttpServer],
) -> None:
    port = start(ROUTES, WEB).port
    for value in ("Basic \xe9\xe9\xe9".encode("latin-1"), "Basic cHJvbTpwdw==\xff".encode("latin-1")):
        status, _body = request(port, "/metrics", value)
        assert status == 401, value
    # user:password whose bytes are not UTF-8 after decoding
    assert request(port, "/metrics", b"Basic " + base64.b64encode(b"prom:\xff\xfe"))[0] == 401
    assert request(port, "/metrics", basic("prom", "pw"))[0] == 200


def test_a_repeated_wrong_password_costs_one_bcrypt_check(
    start: Callable[..., HttpServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = start(ROUTES, WEB)
    fake = held_bcrypt(server, monkeypatch)
    for _ in range(6):
        assert request(server.port, "/metrics", basic("prom", "guess"))[0] == 401
        assert request(server.port, "/metrics", basic("nobody", "guess"))[0] == 401
    assert fake.calls == 2
    assert request(server.port, "/metrics", basic("prom", "pw"))[0] == 200  # the right one still works
    assert request(server.port, "/metrics", basic("prom", "pw"))[0] == 200
    assert fake.calls == 3


def test_the_failure_cache_never_holds_the_password_and_is_bounded() -> None:
    auth = BasicAuth({"prom": HASH})
    auth.FAILED_SIZE = 8
    for i in range(20):
        assert not auth.check("prom", f"secret-guess-{i}")
    assert len(auth._failed) == 8
    assert all(b"secret-guess" not in key and len(key) == 32 for key in auth._failed)
    assert auth.cached("prom", "secret-guess-19") is False
    assert auth.cached("prom", "secret-guess-0") is None  # evicted: checked again if sent again


def test_a_client_guessing_new_passwords_is_throttled_without_bcrypt(
    start: Callable[..., HttpServer],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = start(ROUTES, WEB)  # the defaults: a burst of 10 checks, then 5 a second
    fake = held_bcrypt(server, monkeypatch)
    statuses = [request(server.port, "/metrics", basic("prom", f"guess-{i}"))[0] for i in range(40)]
    assert statuses[:10] == [401] * 10 and set(statuses) == {401, 429}
    assert fake.calls == statuses.count(401) < 30
    assert server.stats.snapshot()["auth_throttled"] == statuses.count(429)
    assert request(server.port, "/metrics", basic("prom", "guess-0"))[0] == 401  # known: no check needed


def test_verified_scrapes_are_served_while_bcrypt_checks_hold_the_untrusted_workers(
    start: Callable[..., HttpServer],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = start(ROUTES, WEB, workers=4, queue=4)
    fake = held_bcrypt(server, monkeypatch)
    assert request(server.port, "/metrics", basic("prom", "pw"))[0] == 200  # verified, cached
    fake.held.clear()
    flood = in_flight(server.port, 12, "/metrics", lambda i: basic("prom", f"guess-{i}"))
    try:
        wait_for(lambda: fake.calls >= 3, 5, "the flood never reached bcrypt")
        for _ in range(5):
            assert request(server.port, "/metrics", basic("prom", "pw")) == (200, b"acceptmon_up 1\n")
        assert fake.calls <= 3  # untrusted work holds at most half the workers
    finally:
        fake.held.set()
        for s in flood:
            s.close()


def test_verified_scrapes_are_served_while_healthz_probes_hold_a_worker(
    start: Callable[..., HttpServer],
) -> None:
    entered, release = threading.Semaphore(0), threading.Event()

    def slow_health() -> tuple[str, bytes]:
        entered.release()
        release.wait(10)
        return "text/plain", b"ok\n"

    server = start({**ROUTES, "/healthz": slow_health}, WEB, workers=4, queue=4)
    flood = in_flight(server.port, 24, "/healthz", lambda _i: None)
    try:
        assert entered.acquire(timeout=5)
        for _ in range(5):
            assert request(server.port, "/metrics", basic("prom", "pw")) == (200, b"acceptmon_up 1\n")
        assert not entered.acquire(timeout=0.2)  # probes never held more than one worker
        assert server.stats.snapshot()["overloaded"] > 0  # probes past their lane's queue: 503
    finally:
        release.set()
        for s in flood:
            s.close()


def test_lanes_serve_trusted_first_and_bound_the_others() -> None:
    lanes: Lanes[str] = Lanes(workers=4, capacity=2)
    for i in range(2):
        assert lanes.offer(f"u{i}", "untrusted") and lanes.offer(f"p{i}", "probe")
    assert not lanes.offer("u2", "untrusted")  # its lane is full; others still have room
    assert lanes.offer("t0", "trusted")
    taken: list[Any] = [lanes.take() for _ in range(4)]
    assert [t[0] for t in taken] == ["t0", "p0", "u0", "u1"]
    # 1 probe + 2 untrusted busy: the last worker is kept for trusted work.
    assert lanes.offer("t1", "trusted")
    assert lanes.take() == ("t1", "trusted")
    assert lanes.close() == ["p1"]
    assert lanes.take() is None


def test_throttle_refills_and_forgets_old_clients() -> None:
    throttle = Throttle(rate=1.0, burst=2, size=2)
    assert [throttle.allow("a", now=0.0) for _ in range(3)] == [True, True, False]
    assert throttle.allow("a", now=1.0)
    assert throttle.allow("b", now=1.0) and throttle.allow("c", now=1.0)
    assert throttle.allow("a", now=1.0)  # forgotten past the table size: a fresh bucket


def test_http_client_sees_401_for_latin1_credentials(start: Callable[..., HttpServer]) -> None:
    port = start(ROUTES, WEB).port
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    conn.putrequest("GET", "/metrics")
    conn.putheader("Authorization", "Basic ñandú".encode("latin-1"))
    conn.endheaders()
    resp = conn.getresponse()
    resp.read()
    assert resp.status == 401 and resp.getheader("WWW-Authenticate") == "Basic"
    conn.request("GET", "/metrics", headers={"Authorization": basic("prom", "pw")})
    assert conn.getresponse().read() == b"acceptmon_up 1\n"  # the connection stayed usable
    conn.close()
