"""LocalSource against the real logrotate: every scheme, restarts between rotations.

The writer pauses while logrotate runs (copytruncate itself loses what is
written between its copy and its truncate), so the result must be exact:
every line once, in order.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from acceptmon.clock import ManualClock
from acceptmon.sources.local import LocalSource
from tests.support.tools import require_tool

pytestmark = pytest.mark.system

SCHEMES = {
    "create": "create\nrotate 20",
    "copytruncate": "copytruncate\nrotate 20",
    "copytruncate-compress": "copytruncate\nrotate 20\ncompress\ndelaycompress",
    "compress": "create\nrotate 20\ncompress\ndelaycompress",
}


class Writer:
    """Appends numbered lines, reopening the path for each batch like WatchedFileHandler."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.n = 0

    def write(self, count: int) -> None:
        with open(self.path, "a") as f:
            for _ in range(count):
                f.write(f"[2026-12-01 10:00:{self.n % 60:02d}] line seq={self.n:06d} {'x' * (self.n % 40)}\n")
                self.n += 1


def consume(src: LocalSource) -> list[int]:
    """Poll once, process and commit everything (the pipeline's consumer, in short)."""
    seqs = []
    for chunk in src.poll():
        seqs += [int(line.split("seq=")[1].split()[0]) for line in chunk.lines]
        src.commit(chunk)
    return seqs


def rotate(logrotate: str, conf: Path, state: Path) -> None:
    done = subprocess.run(
        [logrotate, "-f", "-s", str(state), str(conf)], check=False, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("scheme", sorted(SCHEMES))
def test_exact_across_logrotate_and_restarts(tmp_path: Path, scheme: str) -> None:
    logrotate = require_tool("logrotate")
    log = tmp_path / "app.log"
    conf = tmp_path / "logrotate.conf"
    conf.write_text(f"{log} {{\n{SCHEMES[scheme]}\nmissingok\n}}\n")
    writer = Writer(log)
    writer.write(5)
    clock = ManualClock()
    got: list[int] = []
    state: dict = {}
    src: LocalSource | None = None
    for step in range(12):
        if src is None:  # (re)start: the agent takes its first look at once
            src = LocalSource("app", str(log), clock=clock, read_size=4096)
            src.restore(state)
            got += consume(src)
        writer.write(50 + step)
        if step % 3:  # sometimes rotate before reading
            got += consume(src)
        rotate(logrotate, conf, tmp_path / "state")
        if step % 4 == 1:  # crash: resume from the checkpoint while rotations go on
            state = src.checkpoint()
            src.close()
            src = None
        clock.advance(1)
    if src is None:
        src = LocalSource("app", str(log), clock=clock, read_size=4096)
        src.restore(state)
    for _ in range(10):
        got += consume(src)
        clock.advance(10)
    assert got == list(range(writer.n))
    assert src.health().open_files == 1
    assert sorted(os.listdir(tmp_path))  # logrotate did produce rotated files
    src.close()
