"""``acceptmon runs --follow`` reads through the agent's live loop and source factory."""

from __future__ import annotations

import io
import random
import threading
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from rich.console import Console

from acceptmon.apps.runs import live
from acceptmon.ingest.loop import Loop
from acceptmon.sources.base import Source
from acceptmon.sources.files import expand
from acceptmon.sources.local import LocalSource
from acceptmon.testing import synth

T0 = datetime(2026, 11, 30, 9, 0, 0)


def _run(start: datetime, level: float, seed: int, steps: int) -> list[str]:
    body = synth.traffic(random.Random(seed), start + timedelta(seconds=50), 120, level)
    return [*synth.startup(start, seed=seed, speculative_num_steps=steps), *body]


def test_follow_feeds_through_the_live_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "server.log"
    restart = T0 + timedelta(hours=5)
    lines = [*_run(T0, 2.41, 1, 3), *synth.shutdown(restart), *_run(restart, 1.57, 2, 5)]
    log.write_text("\n".join(lines) + "\n")
    stop = threading.Event()
    stepped: list[dict[str, Source]] = []

    class Spy(Loop):
        def step(self, sources: Mapping[str, Source], budget: int = 64, seconds: float = 0.25) -> int:
            stepped.append(dict(sources))
            fed = super().step(sources, budget, seconds)
            if not self.backlog:
                stop.set()  # the file is read: end the view
            return fed

    monkeypatch.setattr(live, "Loop", Spy)
    worse = live.follow_logs(expand(str(log)), UTC, console=Console(file=io.StringIO()), stop=stop)
    assert worse  # r2 (5 steps, lower accept len) is worse than r1: the lines went through the loop
    assert [list(s) for s in stepped[:1]] == [[str(log)]]
    assert isinstance(stepped[0][str(log)], LocalSource)


def test_the_live_specs_are_the_agents_source_settings() -> None:
    from acceptmon.settings.sources import SourceSettings
    from acceptmon.sources.files import Log
    from acceptmon.sources.rotation import open_local
    from acceptmon.sources.ssh.options import SSHSettings

    specs = live.live_specs(
        [Log("a", ("a.1", "a")), Log("-", ("-",)), Log("h:x", ("x",), opener=open_local, url="ssh://h/x")],
        ssh_config="/etc/ssh/cfg",
    )
    assert specs == [
        SourceSettings("a", "a"),
        SourceSettings("ssh://h/x", "h:x", ssh=SSHSettings(ssh_config="/etc/ssh/cfg")),
    ]
