"""``acceptmon runs`` over five ``ssh://`` SOURCEs (one per host directory) ends with the fleet table."""

from __future__ import annotations

import json
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


def _log(level: float, seed: int) -> str:
    rng = random.Random(seed)
    lines = synth.startup(T0, seed)
    lines += [
        synth.decode_line(T0 + timedelta(seconds=60 + 2 * i), rng.gauss(level, 0.08), 16) for i in range(120)
    ]
    return "\n".join(lines) + "\n"


def test_five_hosts_over_ssh_one_outlier(sshd: SSHServer, tmp_path: Path) -> None:
    urls = []
    for i in range(1, 6):
        host = tmp_path / f"gpu-{i}"
        host.mkdir()
        (host / "sglang.log").write_text(_log(1.6 if i == 2 else 2.4, i))
        urls.append(f"ssh://testhost{host}/sglang.log")
    base = [
        sys.executable,
        "-m",
        "acceptmon",
        "runs",
        "--timezone",
        "UTC",
        "--ssh-config",
        str(sshd.ssh_config),
    ]
    done = subprocess.run([*base, *urls], capture_output=True, text=True, timeout=120, check=False)
    print(done.stdout)
    assert done.returncode == 0, done.stderr
    table = done.stdout[done.stdout.index("fleet: each host") :]
    assert f"hosts are ssh://testhost{tmp_path}/HOST/sglang.log" in table.replace("\n  ", " ")
    assert "  gpu-2 " in table and "outliers: gpu-2\n" in table
    done = subprocess.run(
        [*base, "--format", "json", *urls], capture_output=True, text=True, timeout=120, check=False
    )
    (config,) = json.loads(done.stdout)["fleet"]["configs"]
    assert [h["host"] for h in config["hosts"] if h["status"] == "outlier"] == ["gpu-2"]
    assert "Traceback" not in done.stderr
