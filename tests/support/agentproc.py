"""Start a real ``acceptmon run`` process and read its HTTP endpoints."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support.tools import free_port
from tests.support.wait import wait_for


class AgentProcess:
    def __init__(
        self,
        state_dir: Path,
        args: list[str],
        env: dict[str, str] | None = None,
        port: int | None = None,
        listen_flag: bool = True,
        preexec_fn: Callable[[], None] | None = None,
    ) -> None:
        """Without ``listen_flag`` the settings file must say ``listen: 127.0.0.1:<port>``."""
        self.port = port or free_port()
        self.state_dir = state_dir
        self.log_path = state_dir.parent / f"agent-{self.port}.stderr"
        cmd = [
            sys.executable,
            "-m",
            "acceptmon",
            "run",
            *(["--listen", f"127.0.0.1:{self.port}"] if listen_flag else []),
            "--state-dir",
            str(state_dir),
            *args,
        ]
        self._err = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            cmd,
            stdout=subprocess.DEVNULL,
            stderr=self._err,
            env={**os.environ, **(env or {})},
            preexec_fn=preexec_fn,  # noqa: PLW1509 - only resource limits, set before exec
        )
        wait_for(
            lambda: self.get("/healthz") == "ok\n", 20, f"agent on port {self.port} never became healthy"
        )

    def get(self, path: str) -> str | None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=2) as r:
                return str(r.read().decode())
        except OSError:
            return None

    def api(self, path: str) -> Any:
        text = self.get(path)
        return json.loads(text) if text else None

    def metric(self, name: str, **labels: str) -> float | None:
        text = self.get("/metrics") or ""
        for line in text.splitlines():
            if not line.startswith(name + "{") and not line.startswith(name + " "):
                continue
            found = dict(re.findall(r'(\w+)="([^"]*)"', line.split(" ")[0]))
            if all(found.get(k) == v for k, v in labels.items()):
                return float(line.rsplit(" ", 1)[1])
        return None

    def stderr(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 10) -> int | None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                return None
        self._err.close()
        return self.proc.returncode
