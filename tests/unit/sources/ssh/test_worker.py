"""Host worker rounds without its thread: reconnect backoff, state reports, logging once."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from acceptmon.clock import ManualClock
from acceptmon.sources.ssh.connect import ConnectError
from acceptmon.sources.ssh.hostkeys import HostKeyPolicy
from acceptmon.sources.ssh.options import ConnParams, SSHSettings
from acceptmon.sources.ssh.worker import HostWorker

PARAMS = ConnParams("gpu1", 22, "ops", (), False, HostKeyPolicy("/nonexistent"), 1.0, 0)


class FakeConn:
    def __init__(self) -> None:
        self.up = True
        self.sftp: Any = object()

    def alive(self) -> bool:
        return self.up

    def close(self) -> None:
        self.up = False


class Client:
    def __init__(self) -> None:
        self.states: list[tuple[bool, str]] = []
        self.resyncs = 0
        self.fail_next = False

    def work(self, fs: Any, alive: Any) -> bool:
        if self.fail_next:
            self.fail_next = False
            raise EOFError
        return False

    def host_state(self, up: bool, kind: str, message: str) -> None:
        self.states.append((up, kind))

    def reconnected(self) -> None:
        self.resyncs += 1


@pytest.fixture
def rig() -> tuple[HostWorker, Client, ManualClock, list[Any]]:
    clock = ManualClock()
    outcomes: list[Any] = []

    def connector(params: ConnParams, timeout: float) -> Any:
        out = outcomes.pop(0)
        if isinstance(out, Exception):
            raise out
        return out

    settings = SSHSettings(backoff_base=1.0, backoff_cap=4.0)
    worker = HostWorker(PARAMS, settings, clock, connector, rand=lambda: 1.0)  # type: ignore[arg-type]
    client = Client()
    worker.attach(client)
    return worker, client, clock, outcomes


def test_failures_back_off_then_recover(rig, caplog: pytest.LogCaptureFixture) -> None:
    worker, client, clock, outcomes = rig
    outcomes += [ConnectError("unreachable", "refused")] * 4 + [FakeConn()]
    caplog.set_level(logging.INFO, logger="acceptmon.sources.ssh.worker")
    waits = []
    for _ in range(4):
        assert worker.run_once() is False
        waits.append(worker.idle_delay())
        assert worker.run_once() is False  # too early: no attempt
        clock.advance(waits[-1])
    assert waits == [1.0, 2.0, 4.0, 4.0]
    assert worker.run_once() is True
    assert client.states == [(False, "unreachable")] * 4 + [(True, "")]
    assert client.resyncs == 1
    assert [r.levelname for r in caplog.records] == ["WARNING", "INFO"]


def test_drop_during_reads_reconnects_quickly_and_resyncs(rig) -> None:
    worker, client, clock, outcomes = rig
    outcomes += [FakeConn(), FakeConn()]
    assert worker.run_once() is True
    client.fail_next = True
    assert worker.run_once() is False
    assert client.states[-1] == (False, "io")
    clock.advance(worker.idle_delay())
    assert worker.run_once() is True
    assert client.resyncs == 2 and client.states[-1] == (True, "")


def test_auth_and_host_key_kinds_are_reported(rig) -> None:
    worker, client, clock, outcomes = rig
    outcomes += [ConnectError("auth", "no"), ConnectError("host_key", "changed")]
    worker.run_once()
    clock.advance(10)
    worker.run_once()
    assert client.states == [(False, "auth"), (False, "host_key")]
