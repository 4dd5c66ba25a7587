"""Real components the system tests drive; a missing one fails the test (never skips)."""

from __future__ import annotations

import shutil
import socket

import pytest


def require_tool(name: str) -> str:
    path = shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/bin:/sbin:/bin")
    if path is None:
        pytest.fail(f"{name} is not installed; `make test` installs it (scripts/system-deps.sh)")
    return path


def free_port() -> int:
    """A loopback port nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
