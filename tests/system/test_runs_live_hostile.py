"""``acceptmon runs --follow`` in a real terminal (tmux) on a log whose server_args carry escapes.

The terminal's raw input is captured (``pipe-pane``): none of the log's OSC,
CSI, C1 or bidi characters may reach it. tmux is told to honour OSC 52
(``set-clipboard on``), so a clipboard write that got through would show up
as a paste buffer. The tmux server is a private one (``-L``): its options
touch no one else's sessions.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.hostile_text import hostile_log
from tests.support.tools import require_tool
from tests.support.wait import poll_until

pytestmark = pytest.mark.system

#: Byte sequences from the hostile log that must not reach the terminal as they are.
FORBIDDEN = [
    b"\x1b]52",
    b"\x07",
    b"\x1b[2J",
    b"\x1b[8m",
    "\x9b".encode(),
    "\x9d".encode(),
    "\u202e".encode(),
    "\u2066".encode(),
    "\u200f".encode(),
]


class Tmux:
    def __init__(self, tmux: str, socket: str) -> None:
        self.tmux, self.socket, self.name = tmux, socket, "follow"

    def __call__(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [self.tmux, "-L", self.socket, *args], check=check, capture_output=True, text=True
        )

    def screen(self) -> str:
        return self("capture-pane", "-p", "-t", self.name).stdout

    def wait_for(self, text: str, timeout: float = 60) -> str:
        if not poll_until(lambda: text in self.screen(), timeout, interval=0.1):
            pytest.fail(f"{text!r} never appeared on the screen:\n{self.screen()}")
        return self.screen()


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    t = Tmux(require_tool("tmux"), f"acceptmon-hostile-{tmp_path.name}")
    yield t
    t("kill-server", check=False)


def test_follow_view_writes_no_escapes_from_the_log_to_the_terminal(tmp_path: Path, tmux: Tmux) -> None:
    log = hostile_log(tmp_path / "server.log")
    raw = tmp_path / "terminal.raw"
    follow = (
        f"{shlex.quote(sys.executable)} -m acceptmon runs --follow --timezone UTC {shlex.quote(str(log))}"
    )
    # The view starts on Enter, once the pane's output is being captured.
    cmd = f"read go; {follow}; echo EXIT=$?; read done"
    tmux("new-session", "-d", "-s", tmux.name, "-x", "120", "-y", "50", "-c", str(Path.cwd()), cmd)
    tmux("set-option", "-s", "set-clipboard", "on")
    tmux("pipe-pane", "-t", tmux.name, "-o", f"cat >> {shlex.quote(str(raw))}")
    tmux("send-keys", "-t", tmux.name, "Enter")
    screen = tmux.wait_for("r7 vs r6")
    print(screen)
    tmux("send-keys", "-t", tmux.name, "C-c")
    final = tmux.wait_for("EXIT=")
    assert "Traceback" not in final and "internal error" not in final
    assert r"clip\x1b]52" in screen and "markup[/bold]" in screen
    written = raw.read_bytes()
    assert [f for f in FORBIDDEN if f in written] == []
    buffers = tmux("list-buffers").stdout
    assert "pwned" not in buffers and buffers == "", f"the log wrote the clipboard: {buffers!r}"
