"""A glob follows one series per file: unrelated servers never compare against each other."""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from pathlib import Path

from acceptmon.apps.agent.agent import Agent
from acceptmon.settings import Settings
from acceptmon.settings.sources import SourceSettings
from acceptmon.testing import synth

T0 = datetime(2026, 11, 28, 9, 0, 0)


def server_log(path: Path, seed: int, level: float, start: datetime = T0, **args: object) -> None:
    rng = random.Random(seed)
    body = synth.traffic(rng, start + timedelta(seconds=50), 120, level)
    lines = synth.startup(start, seed=seed, **args) + list(body)
    with path.open("a") as f:
        f.write("".join(line + "\n" for line in lines))


def ingest(agent: Agent) -> None:
    agent.open()
    while agent.step():
        pass
    agent.evaluate(wall_clock=False)


def make_agent(tmp_path: Path, pattern: str) -> Agent:
    cfg = Settings(state_dir=str(tmp_path / "state"), sources=(SourceSettings(path=pattern, name="servers"),))
    return Agent(cfg)


def test_two_unrelated_servers_under_one_glob_are_two_sources(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    # Read as one series (b.log happens to be read first), a.log would be a
    # run after a "change" of model_path with 35% lower acceptance: a false drop.
    server_log(logs / "a.log", 1, 1.57, T0 + timedelta(hours=1), model_path="meta-llama/Llama-3.1-8B")
    server_log(logs / "b.log", 2, 2.41, model_path="Qwen/Qwen3-32B")
    agent = make_agent(tmp_path, str(logs / "*.log"))
    try:
        ingest(agent)
        assert sorted(agent.tracker.sources()) == ["servers:a.log", "servers:b.log"]
        for source in agent.tracker.sources():
            runs = agent.tracker.runs(source)
            assert [r.run_id for r in runs] == ["r1"], (source, runs)
            assert runs[0].diff is None
        assert not [f for f in agent.announce.findings if f.rule == "acceptance_drop_after_change"], (
            agent.announce.findings
        )
    finally:
        agent.close()


def test_a_rotated_file_stays_one_source(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    server_log(logs / "a.log", 1, 2.41)
    agent = make_agent(tmp_path, str(logs / "*"))
    try:
        ingest(agent)
        (logs / "a.log").rename(logs / "a.log.1")
        server_log(logs / "a.log", 3, 2.41, T0 + timedelta(hours=1))
        while agent.step():
            pass
        assert agent.tracker.sources() == ["servers:a.log"]
        assert [r.run_id for r in agent.tracker.runs("servers:a.log")] == ["r1", "r2"]
    finally:
        agent.close()
