"""A peer that never identifies as SSH is abandoned within bounds, counted, and retried ever later.

paramiko read the identification by growing a buffer 128 bytes at a time and rescanning it
for a newline: a peer streaming one endless line (or lines forever before ``SSH-2.0-``)
cost about 0.9 of a core for the whole connect timeout of every reconnect. Each test runs
a real TCP server on loopback that streams garbage (for at most ``STREAM_FOR`` seconds).
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from acceptmon.clock import ManualClock
from acceptmon.sources.ssh.banner import BANNER, MAX_BANNER_BYTES, Replay, read_identification
from acceptmon.sources.ssh.connect import ConnectError, connect
from acceptmon.sources.ssh.hostkeys import HostKeyPolicy
from acceptmon.sources.ssh.options import ConnParams, SSHSettings
from acceptmon.sources.ssh.worker import HostWorker
from tests.support.wait import wait_for

#: How long the flood server streams to one connection at most (the tests' time bound).
STREAM_FOR = 10.0
ENDLESS_LINE = b"x" * 4096
LINES_FOREVER = b"Welcome! This is not the identification line.\r\n" * 80
SILENT = b""


@dataclass
class Flood:
    """A loopback server sending ``chunk`` over and over to every connection."""

    chunk: bytes
    port: int = 0
    accepted: int = 0
    closed_by_peer: int = 0
    stop: threading.Event = field(default_factory=threading.Event)
    threads: list[threading.Thread] = field(default_factory=list)

    def serve(self, listener: socket.socket) -> None:
        listener.settimeout(0.1)
        while not self.stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            self.accepted += 1
            t = threading.Thread(target=self.stream, args=(conn,), daemon=True)
            self.threads.append(t)
            t.start()

    def stream(self, conn: socket.socket) -> None:
        conn.settimeout(0.1)
        with conn:
            if not self.chunk:  # silent: the client's close shows as EOF
                while not self.stop.is_set():
                    try:
                        if conn.recv(1) == b"":
                            self.closed_by_peer += 1
                            return
                    except TimeoutError:
                        continue
                    except OSError:
                        self.closed_by_peer += 1
                        return
                return
            deadline = threading.Event()
            timer = threading.Timer(STREAM_FOR, deadline.set)
            timer.start()
            try:
                while not deadline.is_set() and not self.stop.is_set():
                    try:
                        conn.sendall(self.chunk)
                    except TimeoutError:
                        continue
                    except OSError:  # reset or broken pipe: the client closed
                        self.closed_by_peer += 1
                        return
            finally:
                timer.cancel()


@pytest.fixture
def flood(request: pytest.FixtureRequest) -> Iterator[Flood]:
    server = Flood(request.param)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    server.port = listener.getsockname()[1]
    t = threading.Thread(target=server.serve, args=(listener,), daemon=True)
    t.start()
    try:
        yield server
    finally:
        server.stop.set()
        t.join(5)
        for s in server.threads:
            s.join(5)
        listener.close()


def params(port: int, connect_timeout: float) -> ConnParams:
    return ConnParams("127.0.0.1", port, "ops", (), False, HostKeyPolicy("/nonexistent"), connect_timeout, 0)


@pytest.mark.parametrize(
    "flood", [ENDLESS_LINE, LINES_FOREVER], ids=["endless-line", "lines-forever"], indirect=True
)
def test_a_flooding_peer_is_abandoned_after_the_byte_bound(flood: Flood) -> None:
    # A connect timeout far longer than the test: only the byte bound can end the attempt.
    with pytest.raises(ConnectError) as err:
        connect(params(flood.port, STREAM_FOR * 3), 5.0)
    assert err.value.kind == BANNER
    assert f"sent {MAX_BANNER_BYTES} bytes without an SSH identification line" in str(err.value)
    wait_for(lambda: flood.closed_by_peer == 1, STREAM_FOR, "the connection to be closed by acceptmon")


@pytest.mark.parametrize("flood", [SILENT], ids=["silent"], indirect=True)
def test_a_silent_peer_is_abandoned_after_the_connect_timeout(flood: Flood) -> None:
    with pytest.raises(ConnectError) as err:
        connect(params(flood.port, 0.3), 5.0)
    assert err.value.kind == BANNER and "within 0.3 s" in str(err.value)
    wait_for(lambda: flood.closed_by_peer == 1, STREAM_FOR, "the connection to be closed by acceptmon")


@pytest.mark.parametrize("flood", [ENDLESS_LINE], ids=["endless-line"], indirect=True)
def test_reconnects_to_a_flooding_peer_back_off_and_log_once(
    flood: Flood, caplog: pytest.LogCaptureFixture
) -> None:
    clock = ManualClock()
    settings = SSHSettings(backoff_base=1.0, backoff_cap=4.0)
    worker = HostWorker(params(flood.port, STREAM_FOR * 3), settings, clock, rand=lambda: 1.0)
    states: list[tuple[bool, str]] = []

    class Client:
        def work(self, fs: Any, alive: Any, conn: Any = None) -> bool:
            return False

        def host_state(self, up: bool, kind: str, message: str) -> None:
            states.append((up, kind))

        def reconnected(self) -> None:
            pass

    worker.attach(Client())
    caplog.set_level(logging.INFO, logger="acceptmon.sources.ssh.worker")
    waits = []
    for _ in range(4):
        assert worker.run_once() is False
        waits.append(worker.idle_delay())
        clock.advance(waits[-1])
    assert waits == [1.0, 2.0, 4.0, 4.0]  # exponential, capped (jitter fixed at its top here)
    assert states == [(False, BANNER)] * 4  # counted per attempt
    assert [r.levelname for r in caplog.records] == ["WARNING"]  # logged once per episode
    wait_for(lambda: flood.closed_by_peer == 4, STREAM_FOR, "every connection to be closed by acceptmon")


def test_the_identification_and_what_follows_it_are_replayed() -> None:
    a, b = socket.socketpair()
    with a, b:
        b.sendall(b"hello\r\nworld\r\nSSH-2.0-OpenSSH_9.6\r\n\x00\x00\x01\x2c")
        head = read_identification(a, 5.0)
        assert head == b"SSH-2.0-OpenSSH_9.6\r\n\x00\x00\x01\x2c"
        replay = Replay(a, head)
        assert replay.recv(4) == b"SSH-" and replay.recv(100) == b"2.0-OpenSSH_9.6\r\n\x00\x00\x01\x2c"
        b.sendall(b"more")
        assert replay.recv(100) == b"more"
