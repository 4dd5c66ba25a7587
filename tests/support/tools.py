"""Real components the system tests drive; a missing one fails the test (never skips)."""

from __future__ import annotations

import shutil
import socket
import sys
from pathlib import Path

import pytest


def require_tool(name: str) -> str:
    """``name`` on PATH, beside this interpreter (a tool the dev extra installs into the venv),
    or in the system directories; a missing one fails the test."""
    path = (
        shutil.which(name)
        or shutil.which(name, path=str(Path(sys.executable).parent))
        or shutil.which(name, path="/usr/sbin:/usr/bin:/sbin:/bin")
    )
    if path is None:
        pytest.fail(
            f"{name} is not installed; `make test` installs it (the dev extra, scripts/system-deps.sh)"
        )
    return path


def free_port() -> int:
    """A loopback port nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
