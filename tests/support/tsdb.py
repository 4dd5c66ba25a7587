"""A real Prometheus serving TSDB blocks (backfill's), for the tests that query them."""

from __future__ import annotations

import shutil
import subprocess
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support.tools import free_port, require_tool
from tests.support.wait import wait_for


@contextmanager
def prometheus_on(blocks: Path, work: Path) -> Iterator[str]:
    """Prometheus over a copy of ``blocks`` (under ``work``), ready: its base URL until exit."""
    data = work / "data"
    shutil.copytree(blocks, data)
    (work / "prometheus.yml").write_text("global: {scrape_interval: 15s}\n")
    port = free_port()
    proc = subprocess.Popen(
        [
            require_tool("prometheus"),
            f"--config.file={work / 'prometheus.yml'}",
            f"--storage.tsdb.path={data}",
            "--storage.tsdb.retention.time=100y",
            f"--web.listen-address=127.0.0.1:{port}",
            "--log.level=warn",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        assert proc.poll() is None, "prometheus exited"
        try:
            with urllib.request.urlopen(f"{base}/-/ready", timeout=2) as r:
                return bool(r.status == 200)
        except OSError:
            return False

    try:
        wait_for(ready, 60, "prometheus to become ready")
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=30)
