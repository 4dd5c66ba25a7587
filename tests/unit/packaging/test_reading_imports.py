"""The reading commands load only what reading needs: not the agent, its notifier or its settings.

Every command starts through ``acceptmon.cli``, which builds the parser of every
subcommand (the ``run`` help shows the agent's exit codes, from ``startup``). When
importing ``startup`` loaded the whole agent package, each ``oneshot`` or ``runs``
paid ~90 ms before reading a line (a third of a small log's time). Checked in a
fresh interpreter, where nothing else has imported them.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import acceptmon

DEMO = str(Path(acceptmon.__file__).parent / "apps" / "demo" / "data" / "demo-eagle3-incident.log")

#: Modules only the agent (``acceptmon run``) and its notifier need.
_AGENT_ONLY = (
    "acceptmon.apps.agent.agent",
    "acceptmon.apps.agent.web.server",
    "acceptmon.notify",
    "acceptmon.settings",
    "yaml",
    "paramiko",
    "watchdog",
)

_PROBE = """
import contextlib, io, sys
from acceptmon import cli
with contextlib.redirect_stdout(io.StringIO()):
    code = cli.main(sys.argv[1:])
print(code, *sorted(m for m in {modules!r} if m in sys.modules))
"""


def _loaded(*argv: str) -> list[str]:
    probe = _PROBE.format(modules=_AGENT_ONLY)
    out = subprocess.run(
        [sys.executable, "-c", probe, *argv], capture_output=True, text=True, check=True
    ).stdout.split()
    assert out[0] == "0", out
    return out[1:]


def test_oneshot_loads_nothing_of_the_agent() -> None:
    assert _loaded("oneshot", "--timezone", "UTC", DEMO) == []


def test_runs_loads_nothing_of_the_agent() -> None:
    assert _loaded("runs", "--timezone", "UTC", DEMO) == []


def test_the_agent_still_loads_its_own() -> None:
    """The probe sees these modules when they are loaded: the empty lists above mean something."""
    code = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from acceptmon.apps.agent import daemon; print(sorted(sys.modules))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "'acceptmon.apps.agent.agent'" in code and "'acceptmon.notify'" in code
