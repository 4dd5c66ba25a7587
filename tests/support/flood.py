"""A bounded HTTP(S) flood against a loopback port, run as its own process by system tests.

``python -m tests.support.flood PORT PATH MODE CONNECTIONS SECONDS [CA_FILE]``; MODE is
``wrong-password`` (a new wrong basic-auth password on every request, so no cache can
help) or ``anonymous``. Each connection sends requests back to back on a kept-alive
connection, reconnecting when the server closes it, until SECONDS have passed. Prints
the responses by status (0: connection failed or dropped) as JSON and exits. Refuses
any host but 127.0.0.1: this is a test tool, never pointed elsewhere.
"""

from __future__ import annotations

import base64
import json
import socket
import ssl
import sys
import threading
import time
from collections import Counter

HOST = "127.0.0.1"


def _connect(port: int, ctx: ssl.SSLContext | None) -> socket.socket:
    sock = socket.create_connection((HOST, port), timeout=5)
    return ctx.wrap_socket(sock, server_hostname=HOST) if ctx else sock


def _response(sock: socket.socket, buf: bytearray) -> tuple[int, bool]:
    """Read one response: (status, whether the server keeps the connection)."""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    end = buf.index(b"\r\n\r\n")
    head = bytes(buf[:end]).decode("latin-1").lower()
    del buf[: end + 4]
    status = int(head.split(" ", 2)[1])
    length = next((int(line[15:]) for line in head.split("\r\n") if line.startswith("content-length:")), 0)
    while len(buf) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    del buf[:length]
    return status, "connection: close" not in head


def _hammer(
    port: int, path: str, mode: str, until: float, ctx: ssl.SSLContext | None, out: Counter[int]
) -> None:
    n = 0
    sock: socket.socket | None = None
    buf = bytearray()
    while time.monotonic() < until:
        try:
            if sock is None:
                sock, buf = _connect(port, ctx), bytearray()
            n += 1
            head = f"GET {path} HTTP/1.1\r\nHost: {HOST}\r\n"
            if mode == "wrong-password":
                token = base64.b64encode(f"prometheus:wrong-{threading.get_ident()}-{n}".encode()).decode()
                head += f"Authorization: Basic {token}\r\n"
            sock.sendall(head.encode() + b"\r\n")
            status, keep = _response(sock, buf)
        except (OSError, ValueError):
            status, keep = 0, False
        out[status] += 1
        if not keep and sock is not None:
            sock.close()
            sock = None
    if sock is not None:
        sock.close()


def main(argv: list[str]) -> int:
    port, path, mode, connections, seconds = int(argv[0]), argv[1], argv[2], int(argv[3]), float(argv[4])
    if mode not in ("wrong-password", "anonymous") or not 0 < connections <= 64 or not 0 < seconds <= 60:
        print(
            "bounded floods only: mode wrong-password|anonymous, <= 64 connections, <= 60 s", file=sys.stderr
        )
        return 2
    ctx = ssl.create_default_context(cafile=argv[5]) if len(argv) > 5 else None
    until = time.monotonic() + seconds
    counts: list[Counter[int]] = [Counter() for _ in range(connections)]
    threads = [
        threading.Thread(target=_hammer, args=(port, path, mode, until, ctx, counts[i]), daemon=True)
        for i in range(connections)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + 10)
    total: Counter[int] = sum(counts, Counter())
    print(json.dumps({str(k): v for k, v in sorted(total.items())}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
