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


def test_follow_on_a_kubelet_tree_takes_a_restart_that_comes_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The workload is followed: a restart's ``1.log``, written after the view started, joins it."""
    from acceptmon.sources.container.follow import WorkloadSource

    pod = tmp_path / "llm_sglang-0_0f7c2a5e-1b2c-4d5e-8f90-1234567890ab" / "server"
    pod.mkdir(parents=True)
    stamp = "2026-11-30T09:00:00Z stdout F "
    first = "".join(f"{stamp}{x}\n" for x in _run(T0, 2.41, 1, 3))
    restart = T0 + timedelta(hours=5)
    later = "".join(f"{stamp}{x}\n" for x in [*synth.shutdown(restart), *_run(restart, 1.57, 2, 5)])
    (pod / "0.log").write_text(first)
    stop = threading.Event()
    seen: list[Source] = []

    class Spy(Loop):
        def step(self, sources: Mapping[str, Source], budget: int = 64, seconds: float = 0.25) -> int:
            seen.extend(sources.values())
            fed = super().step(sources, budget, seconds)
            if not (pod / "1.log").exists():
                (pod / "1.log").write_text(later)
            read = sum(s.health().bytes_read for s in sources.values())
            if read == len(first) + len(later) and not self.backlog:
                stop.set()
            return fed

    monkeypatch.setattr(live, "Loop", Spy)
    logs = expand(f"kubernetes:{tmp_path}")
    worse = live.follow_logs(logs, UTC, console=Console(file=io.StringIO()), stop=stop, interval=0.01)
    assert worse  # r2 (the restart, lower accept len) was read, and is worse than r1
    assert isinstance(seen[0], WorkloadSource)
