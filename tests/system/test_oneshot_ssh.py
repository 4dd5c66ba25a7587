"""``acceptmon oneshot ssh://…`` against a real sshd: a rotated set read once over SFTP prints
what the same files print locally, and what ``acceptmon runs ssh://…`` counts."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.sshd import SSHServer, sshd

pytestmark = pytest.mark.system
__all__ = ["sshd"]  # fixture, imported for pytest

INCIDENT = Path(__file__).resolve().parents[1] / "golden" / "eagle3-incident"


def _acceptmon(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "acceptmon", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)


def test_oneshot_over_ssh_reads_the_rotated_set_like_the_local_files(sshd: SSHServer, tmp_path: Path) -> None:
    lines = (INCIDENT / "input.log").read_bytes().splitlines(keepends=True)
    half = len(lines) // 2
    with gzip.open(tmp_path / "server.log.1.gz", "wb") as f:
        f.write(b"".join(lines[:half]))
    (tmp_path / "server.log").write_bytes(b"".join(lines[half:]))
    os.utime(tmp_path / "server.log.1.gz", (1_000_000, 1_000_000))
    url = f"ssh://testhost{tmp_path}/server.log*"
    flags = ["--timezone", "UTC", "--ssh-config", str(sshd.ssh_config)]

    remote = _acceptmon("oneshot", *flags, "--name", "eagle3-incident", url)
    assert remote.returncode == 0, remote.stderr
    assert "Traceback" not in remote.stderr
    assert remote.stdout == (INCIDENT / "expected.prom").read_text()

    # Without --name the log is named by its URL, as `runs` names it.
    named = _acceptmon("oneshot", *flags, url)
    runs = _acceptmon("runs", *flags, "--format", "json", url)
    source = f"ssh://testhost{tmp_path}/server.log"
    assert f'acceptmon_decode_batches_total{{engine="sglang",source="{source}"}} 270.0' in named.stdout
    assert f'"source": "{source}"' in runs.stdout and '"intervals": 90' in runs.stdout
