"""A real agent process under connection floods: bounded threads, no spin at the FD limit.

Regression for issue 14: 45 idle connections under a 40-task cap took
/metrics down, and a descriptor limit made the agent spin at 100% CPU.
"""

from __future__ import annotations

import json
import os
import resource
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from acceptmon.testing import synth
from tests.support.agentproc import AgentProcess
from tests.support.wait import wait_for

NOFILE = 64
TICKS = os.sysconf("SC_CLK_TCK")


def _log(tmp_path: Path) -> Path:
    log = tmp_path / "server.log"
    log.write_text("\n".join(synth.startup(datetime.now() - timedelta(minutes=5), seed=1)) + "\n")
    return log


def threads(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    raise AssertionError("no Threads: line")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime + stime


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def idle_connections(stack: ExitStack, port: int, count: int) -> list[socket.socket]:
    """Connections that never send a byte (the kernel completes them even when not accepted)."""
    out = []
    for _ in range(count):
        s = stack.enter_context(socket.socket())
        s.settimeout(2)
        try:
            s.connect(("127.0.0.1", port))
        except OSError:
            break  # the listen backlog is full: enough
        out.append(s)
    return out


def timed_get(port: int, path: str, timeout: float) -> tuple[float, str]:
    began = time.monotonic()
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as resp:
        return time.monotonic() - began, resp.read().decode()


def rejected(text: str, reason: str) -> float:
    prefix = f'acceptmon_http_connections_rejected_total{{reason="{reason}"}} '
    return next(float(line.removeprefix(prefix)) for line in text.splitlines() if line.startswith(prefix))


@pytest.fixture
def agent(tmp_path: Path) -> Iterator[AgentProcess]:
    proc = AgentProcess(tmp_path / "state", [str(_log(tmp_path))])
    yield proc
    proc.stop()


def test_idle_flood_past_the_bound_keeps_metrics_up_and_threads_bounded(agent: AgentProcess) -> None:
    pid = agent.proc.pid
    assert agent.get("/metrics")
    assert "without a web config" not in agent.stderr()  # loopback: no warning
    before = threads(pid)
    with ExitStack() as stack:
        idle = idle_connections(stack, agent.port, 300)  # the server's bound is 128
        assert len(idle) > 128
        wait_for(lambda: open_fds(pid) >= 128, 10, "the agent never accepted the idle connections")
        took, text = timed_get(agent.port, "/metrics", timeout=5)
        assert "acceptmon_lines_total" in text and took < 5
        # Idle connections cost a descriptor, never a thread (the agent may have started
        # one or two of its own meanwhile, e.g. the file watcher's).
        assert threads(pid) <= before + 4
        assert rejected(text, "limit") > 0
        assert open_fds(pid) < 128 + 40  # the bound plus the agent's own files


def test_descriptor_limit_does_not_spin_and_recovers(tmp_path: Path) -> None:
    def low_nofile() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (NOFILE, NOFILE))

    agent = AgentProcess(tmp_path / "state", [str(_log(tmp_path))], preexec_fn=low_nofile)
    try:
        pid = agent.proc.pid
        with ExitStack() as stack:
            idle_connections(stack, agent.port, 2 * NOFILE)
            wait_for(lambda: open_fds(pid) >= NOFILE - 2, 10, "descriptors never ran out")
            cpu0, wall0 = cpu_seconds(pid), time.monotonic()
            wait_for(lambda: time.monotonic() - wall0 >= 3 and agent.proc.poll() is None, 10, "window")
            ratio = (cpu_seconds(pid) - cpu0) / (time.monotonic() - wall0)
            assert ratio < 0.2, f"agent used {ratio:.0%} CPU while out of descriptors"
        # Idle connections closed: the agent answers again and counted the episode.
        wait_for(lambda: agent.get("/healthz") == "ok\n", 20, "no recovery after the connections closed")
        text = agent.get("/metrics") or ""
        assert rejected(text, "fd_exhausted") > 0
        assert agent.proc.poll() is None
    finally:
        agent.stop()


#: A server whose descriptors are all taken by files it cannot close (logs, SSH, ...).
HOG = """
import json, os, sys
from acceptmon.apps.agent.web.server import HttpServer
server = HttpServer("127.0.0.1", 0, {"/healthz": lambda: ("text/plain", b"ok\\n")})
server.start()
print(server.port, flush=True)
held = []
sys.stdin.readline()
try:
    while True:
        held.append(os.open("/dev/null", os.O_RDONLY))
except OSError:
    pass
print(len(held), flush=True)
sys.stdin.readline()
for fd in held:
    os.close(fd)
print("released", flush=True)
sys.stdin.readline()
print(json.dumps(server.stats.snapshot()), flush=True)
sys.stdin.readline()
"""


def test_accept_backs_off_when_nothing_can_be_closed() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOG],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (NOFILE, NOFILE)),  # noqa: PLW1509
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        port = int(proc.stdout.readline())
        proc.stdin.write("fill\n")
        proc.stdin.flush()
        assert int(proc.stdout.readline()) > 0
        with ExitStack() as stack:
            assert len(idle_connections(stack, port, 5)) == 5  # waiting in the backlog: never accepted
            cpu0, wall0 = cpu_seconds(proc.pid), time.monotonic()
            wait_for(lambda: time.monotonic() - wall0 >= 3 and proc.poll() is None, 10, "window")
            ratio = (cpu_seconds(proc.pid) - cpu0) / (time.monotonic() - wall0)
            assert ratio < 0.2, f"server used {ratio:.0%} CPU spinning on EMFILE"
        proc.stdin.write("release\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "released"
        took, text = timed_get(port, "/healthz", timeout=5)
        assert text == "ok\n" and took < 5  # the paused listener came back by itself
        proc.stdin.write("stats\n")
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["fd_exhausted"] > 0
    finally:
        proc.kill()
        proc.wait()
