"""A caught-up agent woken for a line or two polls once, not twice; a backlog is still drained."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from acceptmon.agent import TRICKLE, Agent
from acceptmon.model import Chunk
from acceptmon.settings import load
from acceptmon.testing.synth import decode_line, startup

T0 = datetime(2026, 5, 1, 8, 0, 0)


def _agent(tmp_path: Path) -> tuple[Agent, Path, list[int]]:
    log = tmp_path / "server.log"
    log.write_text("".join(f"{line}\n" for line in startup(T0, 1)))
    agent = Agent(load(None, [str(log)], {"state_dir": str(tmp_path / "state")}))
    agent.open()
    agent.step()
    polls: list[int] = []
    (_, source) = next(iter(agent.sources.values()))
    real = source.poll

    def counted() -> list[Chunk]:
        chunks = real()
        polls.append(sum(len(c.lines) for c in chunks))
        return chunks

    source.poll = counted  # type: ignore[method-assign]
    return agent, log, polls


def _append(log: Path, n: int) -> None:
    with log.open("a") as f:
        f.write("".join(decode_line(T0, 2.0 + i % 7 / 10) + "\n" for i in range(n)))


def _decodes(agent: Agent) -> float:
    return next(iter(agent.pipeline.store.sources.values())).counters["decode_batches"]


def test_a_trickle_is_read_with_one_poll(tmp_path: Path) -> None:
    agent, log, polls = _agent(tmp_path)
    before = _decodes(agent)
    _append(log, 2)
    assert agent.step(trickle=True) == 2
    assert polls == [2] and not agent.backlog
    assert _decodes(agent) == before + 2
    agent.close()


def test_without_trickle_the_step_polls_until_nothing_is_left(tmp_path: Path) -> None:
    agent, log, polls = _agent(tmp_path)
    _append(log, 2)
    assert agent.step() == 2
    assert polls == [2, 0]
    agent.close()


def test_a_burst_in_trickle_mode_is_still_read_to_the_end(tmp_path: Path) -> None:
    agent, log, polls = _agent(tmp_path)
    before = _decodes(agent)
    _append(log, TRICKLE * 3)
    agent.step(trickle=True)
    assert polls[0] >= TRICKLE and polls[-1] == 0  # not taken for a trickle: polled until empty
    assert _decodes(agent) == before + TRICKLE * 3
    agent.close()
