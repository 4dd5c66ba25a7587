"""`acceptmon check-config` and `acceptmon run` as processes: what check-config accepts
starts, what it refuses never starts, and every start-up failure is one line and a
documented exit code (README, `acceptmon run --help`), never a traceback."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from acceptmon.apps.agent import startup
from acceptmon.testing import synth
from tests.support.agentproc import AgentProcess
from tests.support.tools import free_port
from tests.support.wait import wait_for

BAD = """\
listen: "127.0.0.1:99999"
read_draft_config: "no"
pol_interval: 1
sources:
  - path: ssh://gpu7:ssh/var/log/sglang.log
  - path: ssh:/gpu8/var/log/sglang.log
  - path: ssh://gpu9/var/log/sglang.log
    poll_interval: soon
  - path: "ssh://[::1/var/log/x.log"
"""
BAD_PROBLEMS = [
    "listen: expected HOST:PORT",
    "read_draft_config: expected true or false (a YAML bool), got 'no'",
    "top level: unknown key 'pol_interval'; did you mean 'poll_interval'?",
    "sources[0].path: 'ssh://gpu7:ssh/var/log/sglang.log': bad host or port",
    "sources[1].path: 'ssh:/gpu8/var/log/sglang.log' is not an ssh:// URL",
    "sources[2].poll_interval: expected a positive number of seconds, got 'soon'",
    "sources[3].path: 'ssh://[::1/var/log/x.log': Invalid IPv6 URL",
]


def acceptmon(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "acceptmon", *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


@pytest.mark.parametrize("command", ["check-config", "run"])
def test_invalid_settings_exit_2_listing_every_problem(tmp_path: Path, command: str) -> None:
    settings = tmp_path / "acceptmon.yaml"
    settings.write_text(BAD)
    if command == "check-config":
        done = acceptmon(command, str(settings))
    else:
        done = acceptmon(command, "--config", str(settings), "--state-dir", str(tmp_path / "state"))
    assert done.returncode == startup.SETTINGS, done.stderr
    assert "Traceback" not in done.stderr
    for problem in BAD_PROBLEMS:
        assert problem in done.stderr, f"{problem!r} missing from:\n{done.stderr}"
    assert done.stderr.count("\n  - ") == len(BAD_PROBLEMS)
    assert not (tmp_path / "state").exists(), "refused settings must not start anything"


def test_what_check_config_accepts_runs(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("\n".join(synth.startup(datetime.now(), 1)) + "\n")
    settings = tmp_path / "acceptmon.yaml"
    settings.write_text(f"sources:\n  - path: {log}\n    name: gpu\nread_draft_config: false\n")
    checked = acceptmon("check-config", str(settings))
    assert checked.returncode == 0 and "OK" in checked.stdout, checked.stderr
    agent = AgentProcess(tmp_path / "state", ["--config", str(settings)])
    try:
        wait_for(lambda: agent.metric("acceptmon_server_starts_total", source="gpu") == 1, 20, "not read")
    finally:
        assert agent.stop() == 0, agent.stderr()


def test_listen_address_in_use_exits_3(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = acceptmon(
            "run",
            "--listen",
            f"127.0.0.1:{port}",
            "--state-dir",
            str(tmp_path / "s"),
            str(tmp_path / "a.log"),
        )
    assert done.returncode == startup.LISTEN
    assert one_line(done.stderr) == f"acceptmon: cannot listen on 127.0.0.1:{port}: address already in use"


def test_listen_address_not_of_this_host_exits_3(tmp_path: Path) -> None:
    done = acceptmon(
        "run", "--listen", "192.0.2.1:9469", "--state-dir", str(tmp_path / "s"), str(tmp_path / "a.log")
    )
    assert done.returncode == startup.LISTEN
    assert one_line(done.stderr).startswith("acceptmon: cannot listen on 192.0.2.1:9469: ")


def test_unusable_state_dir_exits_4(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    args = ["--listen", f"127.0.0.1:{free_port()}", str(tmp_path / "a.log")]
    done = acceptmon("run", "--state-dir", str(blocker / "state"), *args)
    assert done.returncode == startup.STATE_DIR
    line = one_line(done.stderr)
    assert line == f"acceptmon: state directory {blocker / 'state'} is unusable: not a directory"


def test_exit_codes_are_documented() -> None:
    text = acceptmon("run", "--help").stdout
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    for code, words in [(1, "runtime failure"), (2, "invalid settings"), (3, "listen address"), (4, "state")]:
        assert f"  {code}  " in text and words in text, text
        assert f"| {code} |" in readme, f"exit code {code} not in the README table"


def test_a_missing_log_file_is_followed_once_it_appears(tmp_path: Path) -> None:
    """Missing is health (source_up 0), not an error count: rotations make files briefly missing."""
    log = tmp_path / "later.log"
    agent = AgentProcess(tmp_path / "state", [str(log)])
    try:
        wait_for(lambda: agent.metric("acceptmon_source_up", source=str(log)) == 0, 20, "not down")
        wait_for(lambda: f"{log}: no such file" in agent.stderr(), 20, "the missing file is not logged")
        log.write_text("\n".join(synth.startup(datetime.now(), 1)) + "\n")
        wait_for(lambda: agent.metric("acceptmon_server_starts_total", source=str(log)) == 1, 20, "not read")
        assert agent.metric("acceptmon_source_up", source=str(log)) == 1
        assert agent.proc.poll() is None
    finally:
        assert agent.stop(signal.SIGTERM) == 0, agent.stderr()
    assert "Traceback" not in agent.stderr()
