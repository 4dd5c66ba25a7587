"""SourceEvents: the one place a source's counters and log-once state live."""

from __future__ import annotations

import logging
import threading

import pytest

from acceptmon.sources.health import SourceEvents

LOG = logging.getLogger("acceptmon.test.health")


def test_a_lasting_problem_is_counted_and_logged_once_per_episode(caplog: pytest.LogCaptureFixture) -> None:
    ev = SourceEvents("src", LOG)
    with caplog.at_level(logging.INFO, logger=LOG.name):
        assert ev.problem("/a.log", "permission_denied", "permission denied: /a.log")
        assert not ev.problem("/a.log", "permission_denied", "permission denied: /a.log")
        assert not ev.snapshot(up=True, lag=0, files=0).up
        ev.ok("/a.log")
        ev.ok("/a.log")  # nothing to end: silent
        assert ev.problem("/a.log", "permission_denied", "permission denied: /a.log")
    health = ev.snapshot(up=True, lag=0, files=1)
    assert dict(health.errors) == {"permission_denied": 2}
    assert health.last_error == "permission denied: /a.log"
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.INFO] == ["src: /a.log: recovered"]


def test_a_forgotten_file_no_longer_holds_the_source_down() -> None:
    ev = SourceEvents("src", LOG)
    ev.problem("/gone.log", "file_missing", "no such file: /gone.log")
    ev.forget("/gone.log")
    assert ev.snapshot(up=True, lag=0, files=0).up


def test_one_off_errors_count_every_time_and_log_only_news(caplog: pytest.LogCaptureFixture) -> None:
    ev = SourceEvents("src", LOG)
    with caplog.at_level(logging.WARNING, logger=LOG.name):
        for _ in range(3):
            ev.error("bad_json", "journalctl printed a line that is not a JSON object")
        ev.error("exited", "journalctl exited (1)")
    assert dict(ev.snapshot(up=True, lag=0, files=0).errors) == {"bad_json": 3, "exited": 1}
    assert len(caplog.records) == 2


def test_a_down_host_makes_the_source_down_and_counts_each_attempt() -> None:
    ev = SourceEvents("src", LOG, host_up=False)
    assert not ev.snapshot(up=True, lag=0, files=0).up
    ev.host(False, "unreachable", "connection refused")
    ev.host(False, "unreachable", "connection refused")
    ev.host(True)
    health = ev.snapshot(up=True, lag=5, files=2, overlong=1)
    assert health.up and dict(health.errors) == {"unreachable": 2}
    assert (health.lag_bytes, health.open_files, health.overlong_lines) == (5, 2, 1)


def test_counters_add_up_across_threads() -> None:
    ev = SourceEvents("src", LOG)

    def work() -> None:
        for _ in range(1000):
            ev.read(3)
            ev.rotated()
            ev.truncated()
            ev.skipped_overlong(1)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    health = ev.snapshot(up=True, lag=0, files=0)
    assert (health.bytes_read, health.rotations, health.truncations, health.overlong_lines) == (
        12_000,
        4000,
        4000,
        4000,
    )
