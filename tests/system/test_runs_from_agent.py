"""``acceptmon runs --from URL`` prints a running agent's runs as ``runs`` prints a log's (same
table, the agent's change column and verdict), through the agent's basic auth
(``ACCEPTMON_API_TOKEN``), never printing the credentials; an agent it cannot ask is exit 2."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import bcrypt
import pytest
import yaml

from acceptmon.testing import synth
from tests.support.tools import free_port
from tests.support.wait import wait_for

pytestmark = pytest.mark.system

T0 = datetime(2026, 11, 30, 9, 0, 0)
PASSWORD = "PLANTEDfromPw-77"


def _run(start: datetime, level: float, seed: int, steps: int) -> list[str]:
    body = synth.traffic(random.Random(seed), start + timedelta(seconds=50), 120, level)
    return [*synth.startup(start, seed=seed, speculative_num_steps=steps), *body]


def _cli(*args: str, token: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "ACCEPTMON_API_TOKEN"}
    env["TZ"] = "UTC"
    if token is not None:
        env["ACCEPTMON_API_TOKEN"] = token
    cmd = [sys.executable, "-m", "acceptmon", "runs", "--timezone", "UTC", *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, check=False, timeout=60)


def _table(text: str) -> str:
    """The run table and verdict, without the notes on reading the log (the agent has its own)."""
    return text.split("\nnote:", maxsplit=1)[0].rstrip("\n")


def test_runs_from_an_agent_with_basic_auth(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("\n".join([*_run(T0, 2.41, 1, 3), *_run(T0 + timedelta(hours=5), 1.57, 2, 5)]) + "\n")
    hashed = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(4)).decode()
    (tmp_path / "web.yml").write_text(yaml.safe_dump({"basic_auth_users": {"ops": hashed}}))
    port = free_port()
    out = (tmp_path / "agent.out").open("wb")
    agent = subprocess.Popen(
        [sys.executable, "-m", "acceptmon", "run", "--listen", f"127.0.0.1:{port}", "--state-dir",
         str(tmp_path / "state"), "--web.config.file", str(tmp_path / "web.yml"), str(log)],
        stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "TZ": "UTC"},
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        local = _cli(str(log))
        assert local.returncode == 3
        wait_for(
            lambda: _table(_cli("--from", url, token=f"ops:{PASSWORD}").stdout) == _table(local.stdout),
            30,
            "the agent's runs never matched the log's",
        )
        got = _cli("--from", url, token=f"ops:{PASSWORD}")
        assert got.returncode == 3, got.stderr
        assert "verdict: r2 vs r1: WORSE" in got.stdout and "tokens over the run" in got.stdout
        only = _cli("--from", url, "--format", "json", str(log), token=f"ops:{PASSWORD}")
        assert '"change": "args.speculative_num_steps: 3' in only.stdout
        refused = _cli("--from", url)
        assert refused.returncode == 2 and "HTTP 401" in refused.stderr
        wrong = _cli("--from", f"http://ops:{PASSWORD}x@127.0.0.1:{port}")
        assert wrong.returncode == 2 and "HTTP 401" in wrong.stderr
        for said in (got, only, refused, wrong):
            assert PASSWORD not in said.stdout + said.stderr
    finally:
        agent.terminate()
        agent.wait(15)
        out.close()


def test_unreachable_agent_is_a_clear_error(tmp_path: Path) -> None:
    gone = _cli("--from", f"http://ops:{PASSWORD}@127.0.0.1:{free_port()}")
    assert gone.returncode == 2
    assert (
        gone.stderr.startswith("acceptmon: cannot reach http://127.0.0.1:") and "Traceback" not in gone.stderr
    )
    assert PASSWORD not in gone.stderr + gone.stdout
    nothing = _cli()
    assert nothing.returncode == 2 and "--from URL" in nothing.stderr
