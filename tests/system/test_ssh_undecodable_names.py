"""A remote file name that is not UTF-8 breaks neither an ``ssh://`` glob nor ``runs`` (issue 19 #1).

paramiko decodes every name of a listing strictly: one such file failed the
whole listing, so the host's connection dropped and reconnected for ever and
not even the other files were read. Names are now read as ``os.fsdecode`` reads
them, shown through ``terminal.printable``, and given back to the server as bytes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from acceptmon.sources.ssh import SSHSource
from acceptmon.sources.ssh.files import open_remote
from acceptmon.sources.ssh.worker import HostPool
from tests.support.sshd import SSHServer, sshd
from tests.support.wait import wait_for

pytestmark = pytest.mark.system
__all__ = ["sshd"]  # fixture, imported for pytest

INCIDENT = Path(__file__).resolve().parents[2] / "tests" / "golden" / "eagle3-incident" / "input.log"


@pytest.fixture
def made() -> Iterator[list[SSHSource]]:
    sources: list[SSHSource] = []
    yield sources
    for s in sources:
        s.close()


def _read(source: SSHSource, got: list[tuple[str, str]], until: int) -> None:
    def step() -> bool:
        for chunk in source.poll():
            got.extend((chunk.source, line) for line in chunk.lines)
            source.commit(chunk)
        return len(got) >= until

    wait_for(step, 15, f"{until} lines over SFTP")


def test_ssh_glob_reads_and_resumes_a_non_utf8_name(
    sshd: SSHServer, tmp_path: Path, made: list[SSHSource]
) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "a.log").write_text("a1\n")
    bad = os.path.join(os.fsencode(logs), b"b-\xff.log")
    with open(bad, "wb") as f:
        f.write(b"b1\n")
    url = f"ssh://testhost{logs}/*.log"
    first = SSHSource("src", url, sshd.settings(glob_interval=0.2), pool=HostPool())
    made.append(first)
    got: list[tuple[str, str]] = []
    _read(first, got, 2)
    assert sorted(got) == [("src:a.log", "a1"), ("src:b-\\xff.log", "b1")]
    assert first.health().up and not first.health().errors
    saved = json.loads(json.dumps(first.checkpoint()))  # as the agent saves and loads it
    first.close()

    with open(bad, "ab") as f:
        f.write(b"b2\n")
    again = SSHSource("src", url, sshd.settings(glob_interval=0.2), pool=HostPool())
    made.append(again)
    again.restore(saved)
    more: list[tuple[str, str]] = []
    _read(again, more, 1)
    assert more == [("src:b-\\xff.log", "b2")]  # resumed at its exact path, nothing read twice


def test_runs_over_ssh_on_a_non_utf8_name(sshd: SSHServer, tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    with open(os.path.join(os.fsencode(logs), b"inc-\xff.log"), "wb") as f:
        f.write(INCIDENT.read_bytes())
    url = f"ssh://testhost{logs}/*.log"
    cmd = [
        sys.executable,
        "-m",
        "acceptmon",
        "runs",
        "--format",
        "json",
        "--ssh-config",
        str(sshd.ssh_config),
        url,
    ]
    done = subprocess.run(cmd, capture_output=True, timeout=60, check=False)
    assert done.returncode in (0, 3), done.stderr.decode(errors="replace")
    (doc,) = json.loads(done.stdout.decode("utf-8"))["sources"]
    assert doc["source"] == f"ssh://testhost{logs}/inc-\\xff.log" and len(doc["runs"]) == 3
    remote = open_remote(url, str(sshd.ssh_config))  # what `runs --follow` follows
    try:
        (lg,) = remote.logs
        assert lg.name == f"ssh://testhost{logs}/inc-\\xff.log"
        assert lg.url == f"ssh://testhost{logs}/inc-\udcff.log"  # exact: the file is found
    finally:
        remote.conn.close()
