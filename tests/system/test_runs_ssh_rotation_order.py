"""Rotations listed over SFTP with equal mtimes join by their number, as locally (issue 25 item 3)."""

from __future__ import annotations

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


def _run(path: Path, day: int, level: float) -> None:
    ts = datetime(2026, 11, day, 9, 0, 0)
    lines = synth.startup(ts, seed=day)
    lines += synth.traffic(random.Random(day), ts + timedelta(seconds=50), 90, level, spread=0.05)
    lines += synth.shutdown(ts + timedelta(seconds=400))
    path.write_text("\n".join(lines) + "\n")


def test_equal_mtimes_over_sftp_give_the_true_verdict(sshd: SSHServer, tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    _run(logs / "server.log.2", 1, 2.4)
    _run(logs / "server.log.1", 2, 1.6)
    _run(logs / "server.log", 3, 2.4)
    for f in logs.iterdir():
        os.utime(f, (1_700_000_000, 1_700_000_000))  # copied in one second
    url = f"ssh://testhost{logs}/server.log*"
    cmd = [
        sys.executable,
        "-m",
        "acceptmon",
        "runs",
        "--timezone",
        "UTC",
        "--ssh-config",
        str(sshd.ssh_config),
        url,
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert "verdict: r3 vs r2: BETTER" in done.stdout
    assert "backwards" not in done.stderr
