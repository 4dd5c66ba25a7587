"""Real processes the system tests drive (the agent, Prometheus, Alertmanager), stopped after."""

from __future__ import annotations

import subprocess
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.support.tools import free_port, require_tool
from tests.support.wait import wait_for


@dataclass
class Proc:
    popen: subprocess.Popen[bytes]
    log: Path
    url: str

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]

    def stop(self) -> int:
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                return self.popen.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.popen.kill()
        return self.popen.wait()


def start_process(args: list[str], log: Path, url: str, ready_path: str) -> Iterator[Proc]:
    with log.open("wb") as out:
        popen = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    proc = Proc(popen, log, url)
    try:

        def ready() -> bool:
            assert popen.poll() is None, f"{args[0]} exited early:\n{proc.output()}"
            try:
                with urllib.request.urlopen(url + ready_path, timeout=1) as resp:
                    return bool(resp.status == 200)
            except OSError:
                return False

        wait_for(ready, 30, f"{args[0]} to answer {ready_path}", interval=0.1)
        yield proc
    finally:
        proc.stop()


def run_prometheus(tmp_path: Path, config: dict[str, Any]) -> Iterator[Proc]:
    """A real Prometheus on a free port with ``config``, its data in ``tmp_path``, ready."""
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = free_port()
    args = [require_tool("prometheus"), f"--config.file={tmp_path / 'prometheus.yml'}"]
    args += [f"--storage.tsdb.path={tmp_path / 'tsdb'}", f"--web.listen-address=127.0.0.1:{port}"]
    args += ["--log.level=warn"]
    yield from start_process(args, tmp_path / "prometheus.out", f"http://127.0.0.1:{port}", "/-/ready")
