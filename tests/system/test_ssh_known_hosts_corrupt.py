"""A corrupted ``known_hosts`` line is named (file and line) with the fix, exit 2, instead of a
bare ``UnicodeDecodeError`` (issue 25 §10)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from acceptmon.sources.ssh.hostkeys import HostKeyRefused, load_known
from tests.support.sshd import SSHServer, sshd

pytestmark = pytest.mark.system
__all__ = ["sshd"]  # fixture, imported for pytest


@pytest.mark.parametrize("bad", [b"other ssh-ed25519 AAAAC3Nza\xff\xfe\n", b"other ssh-ed25519 AAAA!!!x\n"])
def test_runs_names_the_corrupted_line(sshd: SSHServer, tmp_path: Path, bad: bytes) -> None:
    good = sshd.known_hosts.read_bytes()
    sshd.known_hosts.write_bytes(b"# comment\n" + bad + good)
    cmd = [sys.executable, "-m", "acceptmon", "runs", "--ssh-config", str(sshd.ssh_config)]
    done = subprocess.run(
        [*cmd, f"ssh://testhost{tmp_path}/x.log"], capture_output=True, timeout=60, check=False
    )
    stderr = done.stderr.decode()
    assert done.returncode == 2, stderr
    assert f"{sshd.known_hosts} line 2: corrupted" in stderr
    assert "Decode" not in stderr and "Traceback" not in stderr
    assert len(stderr.strip().splitlines()) == 1


def test_load_known_refuses_with_the_line(tmp_path: Path) -> None:
    path = tmp_path / "known_hosts"
    path.write_bytes(b"\n\n\xc3\x28 ssh-rsa AAAA\n")
    with pytest.raises(HostKeyRefused, match=r"known_hosts line 3: corrupted"):
        load_known(str(path))
