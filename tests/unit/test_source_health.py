"""One health bookkeeping for file sources: episodes, states that are no error, the connection."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from acceptmon.clock import ManualClock
from acceptmon.sources.health import ERROR_KINDS, SourceEvents
from acceptmon.sources.local import LocalSource
from acceptmon.sources.ssh import SSHSource
from acceptmon.sources.ssh.options import SSHSettings
from acceptmon.sources.tail.fs import Stat
from tests.support.fakefs import FakeFS
from tests.unit.test_ssh_source import FakePool


def test_a_problem_is_counted_and_logged_once_per_episode(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="acceptmon.sources")
    ev = SourceEvents("app")
    for _ in range(5):
        ev.problem("/x.log", "permission_denied", "permission denied: /x.log")
    assert ev.snapshot(up=True, lag=0, open_files=1).errors == (("permission_denied", 1),)
    assert not ev.snapshot(up=True, lag=0, open_files=1).up
    ev.ok("/x.log")
    ev.ok("/x.log")
    ev.problem("/x.log", "permission_denied", "again")
    h = ev.snapshot(up=True, lag=0, open_files=1)
    assert h.errors == (("permission_denied", 2),) and h.last_error == "again"
    assert [r.levelname for r in caplog.records] == ["WARNING", "INFO", "WARNING"]


def test_down_is_not_an_error_and_forget_ends_it() -> None:
    ev = SourceEvents("app")
    ev.down("/later.log", "missing", "/later.log: no such file")
    h = ev.snapshot(up=True, lag=0, open_files=0)
    assert not h.up and h.errors == ()
    ev.forget("/later.log")
    assert ev.snapshot(up=True, lag=0, open_files=0).up


def test_a_remote_source_is_down_until_connected_and_counts_every_failed_attempt() -> None:
    ev = SourceEvents("gpu1", remote=True)
    assert not ev.snapshot(up=True, lag=0, open_files=1).up
    ev.transport(False, "unreachable", "gpu1: timed out")
    ev.transport(False, "unreachable", "gpu1: timed out")
    ev.transport(True)
    h = ev.snapshot(up=True, lag=0, open_files=1)
    assert h.up and h.errors == (("unreachable", 2),)


def test_counters_and_overlong_lines_add_up() -> None:
    ev = SourceEvents("app")
    ev.read(10)
    ev.read(5)
    ev.rotation("rotated")
    ev.truncation("truncated")
    ev.overlong(2)
    ev.overlong(0)
    h = ev.snapshot(up=True, lag=3, open_files=1, overlong_open=1)
    assert (h.bytes_read, h.rotations, h.truncations, h.overlong_lines, h.lag_bytes) == (15, 1, 1, 3, 3)


class DeniedFS(FakeFS):
    def stat(self, path: str) -> Stat:
        raise PermissionError(13, "Permission denied", path)


def test_local_and_ssh_sources_name_the_same_problem_alike(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_text("secret\n")

    def opener(path: str) -> int:
        raise PermissionError(13, "Permission denied", path)

    local = LocalSource("app", str(log), clock=ManualClock(), opener=opener)
    local.poll()
    remote = SSHSource(
        "gpu1", "ssh://gpu1/x.log", SSHSettings(ssh_config=None), pool=FakePool(), clock=ManualClock()
    )  # type: ignore[arg-type]
    remote.host_state(True, "", "")
    remote.work(DeniedFS(), lambda: True)  # type: ignore[arg-type]
    for h in (local.health(), remote.health()):
        assert not h.up and h.errors == (("permission_denied", 1),)
        assert all(kind in ERROR_KINDS for kind, _ in h.errors)
