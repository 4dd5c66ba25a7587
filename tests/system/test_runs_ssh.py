"""``acceptmon runs ssh://…`` against a real sshd: a rotated pair read once over SFTP, draft configs from the host."""

from __future__ import annotations

import gzip
import json
import os
import random
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from acceptmon.testing import synth
from tests.support.sshd import SSHServer, sshd

pytestmark = pytest.mark.system
__all__ = ["sshd"]  # fixture, imported for pytest

T0 = datetime(2026, 11, 30, 9, 0, 0)


def _run(start: datetime, level: float, seed: int, draft: Path) -> str:
    rng = random.Random(seed)
    head = synth.startup(start, seed=seed, speculative_draft_model_path=str(draft))
    return "\n".join([*head, *synth.traffic(rng, start + timedelta(seconds=50), 120, level)]) + "\n"


def _draft(tmp: Path, name: str, layers: list[int]) -> Path:
    d = tmp / name
    d.mkdir()
    (d / "config.json").write_text(json.dumps({"eagle_config": {"eagle_aux_hidden_state_layer_ids": layers}}))
    return d


def test_runs_over_ssh_reads_the_rotated_pair_and_the_remote_draft_configs(
    sshd: SSHServer, tmp_path: Path
) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    good, bad = _draft(tmp_path, "draft-a", [2, 30, 58]), _draft(tmp_path, "draft-b", [-1, 2, 30])
    with gzip.open(logs / "server.log.1.gz", "wt") as f:
        f.write(_run(T0, 2.41, 1, good))
    (logs / "server.log").write_text(_run(T0 + timedelta(hours=5), 1.57, 2, bad))
    os.utime(logs / "server.log.1.gz", (1_000_000, 1_000_000))
    url = f"ssh://testhost{logs}/server.log*"
    cmd = [sys.executable, "-m", "acceptmon", "runs", "--ssh-config", str(sshd.ssh_config), url]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
    print(done.stdout)
    assert done.returncode == 3, done.stderr
    assert f"ssh://testhost{logs}/server.log\n2 runs, 240 Decode intervals" in done.stdout
    assert "draft.eagle_config.eagle_aux_hidden_state_layer_ids" in done.stdout
    assert "verdict: r2 vs r1: WORSE" in done.stdout
    assert "Traceback" not in done.stderr


def test_unreachable_host_is_one_line_and_exit_2(sshd: SSHServer, tmp_path: Path) -> None:
    sshd.known_hosts.write_text("")  # the host key is unknown now: refused, as the agent refuses it
    cmd = [
        sys.executable,
        "-m",
        "acceptmon",
        "runs",
        "--ssh-config",
        str(sshd.ssh_config),
        f"ssh://testhost{tmp_path}/x.log",
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert sshd.fingerprint in done.stderr
