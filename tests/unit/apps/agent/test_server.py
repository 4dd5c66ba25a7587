"""The HTTP server in-process: auth and headers, TLS reload, and peers that try to stall it."""

from __future__ import annotations

import base64
import http.client
import logging
import shutil
import socket
import ssl
import threading
import time
from collections.abc import Callable
from pathlib import Path

import bcrypt
import pytest

from acceptmon.apps.agent.web.routes import Routes
from acceptmon.apps.agent.web.server import HttpServer
from acceptmon.settings.web import TlsSettings, WebSettings
from tests.support.certs import Certs, issue, make_certs
from tests.support.wait import wait_for

HASH = bcrypt.hashpw(b"pw", bcrypt.gensalt(4)).decode()
ROUTES: Routes = {
    "/metrics": lambda: ("text/plain", b"acceptmon_up 1\n"),
    "/healthz": lambda: ("text/plain", b"ok\n"),
    "/api/runs": lambda: ("application/json", b"[]"),
}


def get(port: int, path: str, auth: str | None = None) -> http.client.HTTPResponse:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    headers = {"Authorization": "Basic " + base64.b64encode(auth.encode()).decode()} if auth else {}
    conn.request("GET", path, headers=headers)
    resp = conn.getresponse()
    resp.read()
    return resp


def test_basic_auth_protects_all_but_healthz_and_headers_go_on_every_response(
    start: Callable[..., HttpServer],
) -> None:
    web = WebSettings(users={"prom": HASH}, headers=(("X-Frame-Options", "deny"),))
    port = start(ROUTES, web=web).port
    for path in ("/metrics", "/api/runs", "/nope"):
        for auth in (None, "prom:wrong", "nobody:pw", "prom"):
            resp = get(port, path, auth)
            assert resp.status == 401 and resp.getheader("WWW-Authenticate") == "Basic", (path, auth)
            assert resp.getheader("X-Frame-Options") == "deny"
    ok = get(port, "/metrics", "prom:pw")
    assert ok.status == 200 and ok.getheader("Content-Type") == "text/plain"
    assert ok.getheader("X-Frame-Options") == "deny"
    assert get(port, "/healthz").status == 200  # liveness probes need no credentials


def test_keep_alive_serves_many_requests_on_one_connection(start: Callable[..., HttpServer]) -> None:
    server = start(ROUTES)
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    for _ in range(5):
        conn.request("GET", "/metrics")
        assert conn.getresponse().read() == b"acceptmon_up 1\n"
    assert server.stats.open == 1


def test_idle_connections_past_the_bound_cost_no_thread_and_do_not_block_metrics(
    start: Callable[..., HttpServer],
) -> None:
    server = start(ROUTES, max_connections=8, workers=2)
    threads = threading.active_count()
    idle = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(40)]
    try:
        began = time.monotonic()
        assert get(server.port, "/metrics").status == 200
        assert time.monotonic() - began < 5
        assert threading.active_count() == threads
        wait_for(lambda: server.stats.open <= 8, 5, "the connection bound was not kept")
        assert server.stats.snapshot()["limit"] >= 32
    finally:
        for s in idle:
            s.close()


def test_a_slowloris_client_is_disconnected(start: Callable[..., HttpServer]) -> None:
    server = start(ROUTES, head_timeout=2.0)
    with socket.create_connection(("127.0.0.1", server.port)) as s:
        s.settimeout(1.0)  # the attack's pace: one byte a second, never finishing the head
        began, closed = time.monotonic(), False
        request = b"GET /metrics HTTP/1.1\r\nHost: x\r\n" + b"X-Pad: " + b"a" * 100
        for byte in request:
            try:
                s.send(bytes([byte]))
                if s.recv(1) == b"":
                    closed = True
                    break
            except TimeoutError:
                pass
            except OSError:
                closed = True
                break
        assert closed and time.monotonic() - began < 5
    assert server.stats.snapshot()["head_timeout"] == 1


def test_a_full_queue_gets_503_not_a_hang(start: Callable[..., HttpServer]) -> None:
    entered, release = threading.Event(), threading.Event()

    def slow() -> tuple[str, bytes]:
        entered.set()
        release.wait(10)
        return "text/plain", b"slow\n"

    server = start({**ROUTES, "/slow": slow}, workers=1, queue=1)
    first = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    first.request("GET", "/slow")
    assert entered.wait(5)
    second = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    second.request("GET", "/metrics")  # waits in the queue
    wait_for(lambda: server._work.qsize() == 1, 5, "second request never queued")
    assert get(server.port, "/metrics").status == 503
    release.set()
    assert first.getresponse().read() == b"slow\n"
    assert second.getresponse().read() == b"acceptmon_up 1\n"
    assert server.stats.snapshot()["overloaded"] == 1


def _served_serial(port: int, ca: Path) -> int:
    ctx = ssl.create_default_context(cafile=str(ca))
    with (
        socket.create_connection(("127.0.0.1", port)) as raw,
        ctx.wrap_socket(raw, server_hostname="localhost") as s,
    ):
        cert = s.getpeercert()
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        assert s.recv(100).startswith(b"HTTP/1.1 200")
    return int(str(cert["serialNumber"]), 16)


def test_a_renewed_certificate_is_served_and_a_broken_one_keeps_the_old(
    start: Callable[..., HttpServer], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    certs: Certs = make_certs(tmp_path / "certs")
    live_cert, live_key = tmp_path / "live.crt", tmp_path / "live.key"
    shutil.copy(certs.server_cert, live_cert)
    shutil.copy(certs.server_key, live_key)
    server = start(ROUTES, web=WebSettings(tls=TlsSettings(cert_file=str(live_cert), key_file=str(live_key))))
    first = _served_serial(server.port, certs.ca)
    issue(certs.ca, certs.ca.with_suffix(".key"), tmp_path / "renewed", "localhost", server=True)
    shutil.copy(tmp_path / "renewed.key", live_key)
    shutil.copy(tmp_path / "renewed.crt", live_cert)
    renewed = _served_serial(server.port, certs.ca)
    assert renewed != first
    live_cert.write_text("-----BEGIN CERTIFICATE-----\ngarbage\n-----END CERTIFICATE-----\n")
    with caplog.at_level(logging.ERROR, logger="acceptmon.settings.web"):
        assert _served_serial(server.port, certs.ca) == renewed
        assert _served_serial(server.port, certs.ca) == renewed
    assert len([r for r in caplog.records if "keeping the old one" in r.message]) == 1


def test_plain_http_to_the_tls_port_is_refused_and_counted(
    start: Callable[..., HttpServer], tmp_path: Path
) -> None:
    certs = make_certs(tmp_path / "certs")
    server = start(
        ROUTES,
        web=WebSettings(tls=TlsSettings(cert_file=str(certs.server_cert), key_file=str(certs.server_key))),
    )
    with pytest.raises((http.client.HTTPException, OSError)):
        get(server.port, "/metrics")
    wait_for(lambda: server.stats.snapshot()["tls_error"] == 1, 5, "failed handshake not counted")


def test_a_client_that_never_reads_the_response_frees_its_worker(start: Callable[..., HttpServer]) -> None:
    big = b"x" * (64 << 20)  # far more than the loopback socket buffers hold
    server = start({**ROUTES, "/big": lambda: ("text/plain", big)}, workers=1, write_timeout=1.0)
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect(("127.0.0.1", server.port))
        s.sendall(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
        wait_for(lambda: server.stats.snapshot()["write_timeout"] == 1, 10, "the stuck write never timed out")
        assert get(server.port, "/metrics").status == 200  # the only worker is free again
