"""A remote draft config.json is read off the ingestion thread, with a deadline (issue 14 §5).

The agent follows a log on a real sshd and a local log. The remote server's
start line names a draft model whose ``config.json`` is a FIFO nobody
writes: reading it hangs the remote ``sftp-server``. While it hangs, the
local source keeps flowing and ``/metrics`` answers at once; after the
deadline the remote lines arrive too. A readable config.json ends up in the
run's snapshot.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from acceptmon.sources.ssh.fetch import FETCH_DEADLINE
from acceptmon.testing import synth
from tests.support.agentproc import AgentProcess
from tests.support.sshd import SSHServer, sshd
from tests.support.wait import wait_for

pytestmark = pytest.mark.system
__all__ = ["sshd"]  # fixture, imported for pytest

T0 = datetime(2026, 11, 30, 12, 0, 0)


def _append(path: Path, lines: list[str]) -> None:
    with path.open("a") as f:
        f.write("".join(line + "\n" for line in lines))


def _config(tmp: Path, sshd: SSHServer, remote_log: Path, local_log: Path, **remote: object) -> Path:
    cfg = tmp / "acceptmon.yaml"
    cfg.write_text(
        json.dumps(
            {
                "sources": [
                    {
                        "name": "remote",
                        "path": f"ssh://testhost{remote_log}",
                        "ssh_config": str(sshd.ssh_config),
                        "poll_interval": 0.1,
                        "timezone": "UTC",
                        **remote,
                    },
                    {"name": "local", "path": str(local_log), "timezone": "UTC"},
                ]
            }
        )
    )
    return cfg


@pytest.fixture
def agents() -> Iterator[list[AgentProcess]]:
    started: list[AgentProcess] = []
    yield started
    for agent in started:
        agent.stop()


def test_hung_remote_draft_config_stalls_neither_other_sources_nor_metrics(
    sshd: SSHServer, tmp_path: Path, agents: list[AgentProcess]
) -> None:
    draft = tmp_path / "draft"
    draft.mkdir()
    os.mkfifo(draft / "config.json")  # opening it for reading blocks until a writer comes: never
    remote, local = tmp_path / "remote.log", tmp_path / "local.log"
    _append(remote, [synth.server_args_line(T0, speculative_draft_model_path=str(draft))])
    _append(remote, [synth.decode_line(T0, 2.5)] * 3)
    _append(local, synth.startup(T0, seed=1))
    agent = AgentProcess(tmp_path / "state", ["--config", str(_config(tmp_path, sshd, remote, local))])
    agents.append(agent)
    # Local lines keep flowing and /metrics answers at once during the whole
    # hang, and for a while after the remote lines came through.
    deadline, after = time.monotonic() + FETCH_DEADLINE + 20, 0
    n = 0
    while after < 3:
        assert time.monotonic() < deadline, "remote lines never arrived after the draft config read gave up"
        n += 1
        _append(local, [synth.decode_line(T0, 2.0)])
        wait_for(
            lambda n=n: agent.metric("acceptmon_decode_batches_total", source="local") == n,
            3,
            "the local source stalled behind a hung remote file",
        )
        started = time.monotonic()
        assert agent.get("/metrics") is not None
        assert time.monotonic() - started < 1.0, "/metrics blocked behind a hung remote file"
        if agent.metric("acceptmon_decode_batches_total", source="remote") == 3:
            after += 1
    assert n > 3, "the remote lines came through before the hung read could have timed out"
    assert "cannot read remote file" in agent.stderr() and "Traceback" not in agent.stderr()


def test_remote_draft_config_is_part_of_the_run_snapshot(
    sshd: SSHServer, tmp_path: Path, agents: list[AgentProcess]
) -> None:
    draft = tmp_path / "draft"
    draft.mkdir()
    layers = [2, 30, 58]
    (draft / "config.json").write_text(
        json.dumps({"eagle_config": {"eagle_aux_hidden_state_layer_ids": layers}})
    )
    remote, local = tmp_path / "remote.log", tmp_path / "local.log"
    _append(remote, [synth.server_args_line(T0, speculative_draft_model_path=str(draft))])
    _append(remote, [synth.decode_line(T0, 2.5)])
    local.write_text("")
    agent = AgentProcess(tmp_path / "state", ["--config", str(_config(tmp_path, sshd, remote, local))])
    agents.append(agent)
    wait_for(
        lambda: agent.metric("acceptmon_decode_batches_total", source="remote") == 1, 20, "remote never read"
    )
    runs = agent.api("/api/runs/r1")
    text = json.dumps(runs)
    assert "eagle_aux_hidden_state_layer_ids" in text and "58" in text, text[:2000]


def test_a_repo_id_draft_is_found_in_the_remote_hf_cache(
    sshd: SSHServer, tmp_path: Path, agents: list[AgentProcess]
) -> None:
    snap = tmp_path / "hf" / "hub" / "models--org--draft" / "snapshots" / "abc123"
    snap.mkdir(parents=True)
    (snap / "config.json").write_text(
        json.dumps({"eagle_config": {"eagle_aux_hidden_state_layer_ids": [7, 8]}})
    )
    remote, local = tmp_path / "remote.log", tmp_path / "local.log"
    _append(remote, [synth.server_args_line(T0, speculative_draft_model_path="org/draft")])
    _append(remote, [synth.decode_line(T0, 2.5)])
    local.write_text("")
    cfg = _config(tmp_path, sshd, remote, local, hf_home=str(tmp_path / "hf"))
    agent = AgentProcess(tmp_path / "state", ["--config", str(cfg)])
    agents.append(agent)
    wait_for(
        lambda: agent.metric("acceptmon_decode_batches_total", source="remote") == 1, 20, "remote never read"
    )
    assert "eagle_aux_hidden_state_layer_ids" in json.dumps(agent.api("/api/runs/r1"))
    assert agent.metric("acceptmon_draft_config_missing", source="remote") == 0
