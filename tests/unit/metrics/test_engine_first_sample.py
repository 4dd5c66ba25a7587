"""One series per source from its first sample: the engine is known before anything is exported.

On main a source's series carried ``engine=""`` until its first acceptance line and
``engine="sglang"`` after it: two series for one log, in backfill's history and on the
agent's ``/metrics`` (a scrape between the start line and the first Decode line).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from acceptmon.apps.agent.agent import Agent
from acceptmon.apps.agent.api import metrics_text
from acceptmon.apps.backfill import collect
from acceptmon.clock import ManualClock
from acceptmon.metrics.engine import LLAMACPP, LMDEPLOY, SGLANG, VLLM, of_start, sniff
from acceptmon.settings import from_mapping
from acceptmon.sources.files import expand
from acceptmon.testing import synth

START = datetime.now().replace(minute=0, second=0, microsecond=0) - timedelta(days=2)
_ENGINE = re.compile(r'engine="([^"]*)"')


def _engines(text: str) -> set[str]:
    """The ``engine`` label values of the per-source series in an exposition."""
    return {
        m.group(1) for line in text.splitlines() if 'source="gpu"' in line for m in _ENGINE.finditer(line)
    }


@pytest.fixture
def agent(tmp_path: Path) -> Iterator[Agent]:
    cfg = from_mapping(
        {
            "state_dir": str(tmp_path / "state"),
            "read_draft_config": False,
            "sources": [{"path": str(tmp_path / "server.log"), "name": "gpu", "read_from_beginning": True}],
        }
    )
    (tmp_path / "server.log").write_text("")
    a = Agent(cfg, clock=ManualClock(time.time()))
    a.open()
    yield a
    a.close()


def _append(agent: Agent, path: Path, lines: list[str]) -> str:
    with path.open("a") as f:
        f.write("".join(line + "\n" for line in lines))
    agent.step()
    while agent.loop.backlog:
        agent.step()
    return metrics_text(agent)


def test_the_agent_names_sglang_from_the_start_line_on(tmp_path: Path, agent: Agent) -> None:
    log = tmp_path / "server.log"
    assert _engines(_append(agent, log, [synth.server_args_line(START)])) == {SGLANG}
    later = [synth.decode_line(START + timedelta(seconds=60 + i), 2.4, 8) for i in range(5)]
    assert _engines(_append(agent, log, later)) == {SGLANG}


def test_the_agent_names_vllm_from_its_first_lines(tmp_path: Path, agent: Agent) -> None:
    first = "(APIServer pid=7) INFO 03-02 09:00:00 [api_server.py:1885] vLLM API server version 0.11.0"
    assert _engines(_append(agent, tmp_path / "server.log", [first, "NCCL INFO bootstrap"])) == {VLLM}


def test_backfill_writes_one_series_per_source(tmp_path: Path) -> None:
    """The start-up lines and the first Decode line are more than a step apart."""
    lines = synth.startup(START, 1)
    lines += [synth.decode_line(START + timedelta(seconds=300 + 10 * i), 2.4, 8) for i in range(30)]
    path = tmp_path / "server.log"
    path.write_text("".join(line + "\n" for line in lines))
    logs = [lg.__class__(name="gpu", files=lg.files) for lg in expand(str(path))]
    sampler = collect(logs, UTC, 60.0, None, {})
    engines = {
        dict(key).get("engine")
        for family in sampler.recorder.families.values()
        for key in family.points
        if dict(key).get("source") == "gpu"
    }
    assert engines == {SGLANG}
    first = min(ts for f in sampler.recorder.families.values() for p in f.points.values() for ts, *_ in p)
    assert first < START.timestamp() + 300  # a sample before the first Decode line names the engine


@pytest.mark.parametrize(
    ("lines", "engine"),
    [
        (["noise", "[2026-01-01 00:00:00] server_args=ServerArgs(model_path='m')"], SGLANG),
        (["INFO 03-02 09:00:00 [utils.py:326] non-default args: {'model': 'm'}"], VLLM),
        (
            ["slot print_timing: id  0 | task 4 | draft acceptance rate = 0.5 (5 accepted / 10 generated)"],
            LLAMACPP,
        ),
        (["[TM][INFO] Avg thr (in/out): 1.0 / 2.0 tokens/s, SpecDecoding metrics: ..."], LMDEPLOY),
        (["nothing an engine alone prints", "Traceback (most recent call last):"], ""),
    ],
)
def test_first_lines_name_the_engine(lines: list[str], engine: str) -> None:
    assert sniff(lines) == engine


def test_start_arguments_name_the_engine() -> None:
    assert of_start({"model_path": "m", "speculative_algorithm": "EAGLE3"}) == SGLANG
    assert of_start({"model": "m", "speculative_config": {}}) == VLLM
    assert of_start({"model": "m", "build": "b1", "model_draft": "d.gguf"}) == LLAMACPP
    assert of_start({}) == ""
