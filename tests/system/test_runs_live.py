"""``acceptmon runs --follow`` in a real terminal (tmux): the verdict changes as a worse restart arrives.

The screen is captured before and after the restart (the captures are
printed, so ``pytest -s`` shows them); Ctrl-C ends the view cleanly with the
verdict's exit status.
"""

from __future__ import annotations

import random
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from acceptmon.testing import synth
from tests.support.tools import require_tool

pytestmark = pytest.mark.system

T0 = datetime(2026, 11, 30, 9, 0, 0)


def _run(start: datetime, level: float, seed: int, steps: int) -> list[str]:
    rng = random.Random(seed)
    body = synth.traffic(rng, start + timedelta(seconds=50), 120, level)
    return [*synth.startup(start, seed=seed, speculative_num_steps=steps), *body]


class Tmux:
    def __init__(self, tmux: str, name: str) -> None:
        self.tmux, self.name = tmux, name

    def __call__(self, *args: str) -> str:
        return subprocess.run([self.tmux, *args], check=True, capture_output=True, text=True).stdout

    def screen(self) -> str:
        return self("capture-pane", "-p", "-t", self.name)

    def wait_for(self, text: str, timeout: float = 30) -> str:
        deadline = time.monotonic() + timeout
        while text not in (screen := self.screen()):
            if time.monotonic() > deadline:
                pytest.fail(f"{text!r} never appeared on the screen:\n{screen}")
            time.sleep(0.1)  # polling the terminal
        return screen


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    t = Tmux(require_tool("tmux"), f"acceptmon-{tmp_path.name}")
    yield t
    subprocess.run([t.tmux, "kill-session", "-t", t.name], capture_output=True, check=False)


def test_live_view_verdict_turns_worse_after_a_worse_restart(tmp_path: Path, tmux: Tmux) -> None:
    log = tmp_path / "server.log"
    log.write_text("\n".join(_run(T0, 2.41, 1, steps=3)) + "\n")
    cmd = f"{shlex.quote(sys.executable)} -m acceptmon runs --follow {shlex.quote(str(log))}; echo EXIT=$?; sleep 60"
    tmux("new-session", "-d", "-s", tmux.name, "-x", "80", "-y", "30", "-c", str(Path.cwd()), cmd)
    before = tmux.wait_for("nothing to compare against yet")
    print("before the restart:\n" + before)
    assert "r1" in before and "first run seen" in before
    with log.open("a") as f:
        restart = T0 + timedelta(hours=5)
        f.write("\n".join([*synth.shutdown(restart), *_run(restart, 1.57, 2, steps=5)]) + "\n")
    after = tmux.wait_for("WORSE")
    print("after the restart:\n" + after)
    assert "r2 vs r1: WORSE" in after and "args.speculative_num_steps: 3 → 5" in after
    assert max(map(len, after.splitlines())) <= 80
    tmux("send-keys", "-t", tmux.name, "C-c")
    final = tmux.wait_for("EXIT=")
    assert "EXIT=3" in final and "Traceback" not in final
