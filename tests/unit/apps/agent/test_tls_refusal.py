"""A client refused at the TLS handshake learns why (the alert), not "connection reset".

In TLS 1.3 a client sends its request right after its part of the handshake; a
server that then refuses the client's certificate and closes at once leaves that
request unread, so the kernel answers with a reset that overtakes the alert, and
Prometheus shows "connection reset by peer" instead of "certificate required".
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Callable
from pathlib import Path

from acceptmon.apps.agent.web.routes import Routes
from acceptmon.apps.agent.web.server import HttpServer
from acceptmon.settings.web import TlsSettings, WebSettings
from tests.support.certs import make_certs
from tests.support.wait import wait_for

ROUTES: Routes = {"/metrics": lambda: ("text/plain", b"ok\n")}
TRIES = 20


def _refusal(port: int, ctx: ssl.SSLContext) -> str:
    """What a client without a certificate sees after sending its request at once."""
    raw = socket.create_connection(("127.0.0.1", port), timeout=5)
    with raw, ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
        try:
            tls.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n" + b"x" * 4096)
            tls.recv(1024)
        except ssl.SSLError as exc:
            return f"alert: {exc.reason}"
        except OSError as exc:
            return f"{type(exc).__name__}"
    return "answered"


def test_a_client_without_a_certificate_reads_the_alert_every_time(
    start: Callable[..., HttpServer], tmp_path: Path
) -> None:
    certs = make_certs(tmp_path / "certs")
    tls = TlsSettings(
        cert_file=str(certs.server_cert),
        key_file=str(certs.server_key),
        client_auth_type="RequireAndVerifyClientCert",
        client_ca_file=str(certs.ca),
        min_version="TLS13",
    )
    server = start(ROUTES, web=WebSettings(tls=tls))
    ctx = ssl.create_default_context(cafile=str(certs.ca))
    seen = [_refusal(server.port, ctx) for _ in range(TRIES)]
    assert seen == ["alert: TLSV13_ALERT_CERTIFICATE_REQUIRED"] * TRIES
    wait_for(lambda: server.stats.snapshot()["tls_error"] == TRIES, 5, "refusals not counted")
    wait_for(lambda: server.stats.open == 0, 5, "refused connections kept open")
