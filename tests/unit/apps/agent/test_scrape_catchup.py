"""The loop, the HTTP server and the watcher in-process, with a poll interval of an hour:
only a scrape (it asks the loop to catch up) or a rotation (a file event) makes it read."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from acceptmon.apps.agent import daemon
from acceptmon.apps.agent.agent import Agent
from acceptmon.apps.agent.web.server import HttpServer
from acceptmon.clock import ManualClock
from acceptmon.detect.findings import FLOOR
from acceptmon.settings import from_mapping
from acceptmon.testing import synth
from tests.support.wait import wait_for

NOW = datetime(2026, 3, 1, 12, 0, 0)
HOUR = 3600


def append(path: Path, lines: list[str]) -> None:
    with path.open("a") as f:
        f.write("".join(line + "\n" for line in lines))


def decode(running: int, at: datetime = NOW) -> str:
    return synth.decode_line(at, 2.4, running)


@dataclass
class Live:
    agent: Agent
    server: HttpServer
    log: Path
    clock: ManualClock

    def scrape(self) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.server.port}/metrics", timeout=30) as r:
            return str(r.read().decode())

    def findings(self) -> list[dict[str, Any]]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.server.port}/api/findings", timeout=30) as r:
            return list(json.load(r))

    def running(self) -> float | None:
        prefix = 'acceptmon_running_requests{engine="sglang",source="gpu"} '
        line = next((x for x in self.scrape().splitlines() if x.startswith(prefix)), None)
        return None if line is None else float(line.rpartition(" ")[2])

    def decoded(self) -> float:
        """Read in-process, without a scrape (a scrape would make the loop catch up)."""
        with self.agent.lock:
            stats = self.agent.pipeline.store.sources.get("gpu")
            return stats.counters["decode_batches"] if stats else 0.0


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Live]:
    log = tmp_path / "server.log"
    append(log, synth.startup(NOW, 1))
    cfg = from_mapping(
        {
            "state_dir": str(tmp_path / "state"),
            "listen": "127.0.0.1:0",
            "read_draft_config": False,
            "poll_interval": HOUR,
            "sources": [{"path": str(log), "name": "gpu"}],
            "detect": {"floor": {"accept_len": 3.0}},
        }
    )
    clock = ManualClock()
    agent = Agent(cfg, clock=clock)
    agent.catchup.deadline = 30  # semantics here, not speed: a loaded machine must not flake
    agent.open()
    server = daemon.serve(agent)
    stop = threading.Event()
    loop = threading.Thread(target=agent.run, args=(stop,), name="ingest")
    loop.start()
    try:
        yield Live(agent, server, log, clock)
    finally:
        stop.set()
        agent.waker.wake()
        loop.join(30)
        agent.close()
        server.stop()


def test_a_scrape_shows_a_line_appended_just_before_it(live: Live) -> None:
    append(live.log, [decode(11)])
    assert live.running() == 11  # the loop slept (an hour); the scrape woke it and waited
    # Quiet for longer than quiet_after, in a directory events cover: polls skip the file's
    # stat, and a plain append names no file, so the scrape must make the loop look anyway.
    live.agent.events.watching(str(live.log.parent))
    live.clock.advance(60)
    assert live.running() == 11
    for n in range(3):
        append(live.log, [decode(700 + n)])
        assert live.running() == 700 + n


def test_a_scrape_shows_the_findings_of_the_lines_before_it(live: Live) -> None:
    assert live.findings() == []  # evaluated just now: the next periodic evaluation is a second away
    append(live.log, [decode(8, NOW + timedelta(seconds=10 * i)) for i in range(30)])  # below the floor
    assert FLOOR in {f["rule"] for f in live.findings() if f["active"]}


def test_a_scrape_never_waits_past_its_deadline_while_the_loop_is_busy(
    live: Live, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert live.running() is None  # startup read; no Decode line yet
    source = live.agent.sources["gpu"][1]
    real, entered, release = source.poll, threading.Event(), threading.Event()

    def slow() -> Any:
        entered.set()
        release.wait(30)
        return real()

    monkeypatch.setattr(source, "poll", slow)
    live.agent.catchup.deadline = 0.2
    try:
        began = time.monotonic()
        text = live.scrape()  # wakes the loop, which now hangs in poll()
        waited = time.monotonic() - began
        assert entered.is_set()
        assert 0.2 <= waited < 1.5, waited
        assert "acceptmon_decode_batches_total" in text  # served what there was
        append(live.log, [decode(5)])
    finally:
        release.set()
    wait_for(lambda: live.running() == 5, 10, "the line once the loop is free again")


def test_rotation_wakes_the_loop_without_a_scrape(live: Live) -> None:
    watcher = daemon._watch(live.agent)
    assert watcher is not None
    try:
        append(live.log, [decode(3)])
        assert live.running() == 3 and live.decoded() == 1
        # The new file is written elsewhere and moved in whole: an append to it would wake nothing.
        new = live.log.parent / "elsewhere" / "server.log"
        new.parent.mkdir()
        append(new, [decode(4, NOW + timedelta(seconds=1)), decode(5, NOW + timedelta(seconds=2))])
        live.log.rename(live.log.with_suffix(".log.1"))
        new.rename(live.log)
        wait_for(lambda: live.decoded() == 3, 10, "the rotated-in file, read on the move's event")
    finally:
        watcher.stop()
