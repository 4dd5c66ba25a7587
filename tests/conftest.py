"""Shared test fixtures: where the format-exact samples live; no test leaks a thread or a process."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from tests.support.wait import poll_until

#: CI tries the same examples every run (a red build is reproducible, never a roll of the
#: dice); a developer's run explores new ones, and a failure found there becomes a pinned test.
settings.register_profile("ci", derandomize=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("ACCEPTMON_SHARED", ROOT.parent / "shared"))
#: The shared samples when they sit beside the checkout (CI, developers), else the
#: copy vendored with the tests, so a bare clone still runs the whole suite.
_BESIDE = SHARED / "samples" / "sglang"
SAMPLES = _BESIDE if (_BESIDE / "manifest.json").exists() else ROOT / "tests" / "data" / "sglang-samples"


@pytest.fixture(scope="session")
def samples_dir() -> Path:
    if not (SAMPLES / "manifest.json").exists():
        pytest.fail(f"format samples not found at {SAMPLES} (set ACCEPTMON_SHARED)")
    return SAMPLES


def _children() -> set[int]:
    """Live child processes of this test process (zombies excluded: they are reaped by their owner)."""
    me, found = str(os.getpid()), set()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            fields = Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == me and fields[0] != "Z":
            found.add(int(entry.name))
    return found


@pytest.fixture(autouse=True)
def _no_leaked_threads_or_processes() -> Iterator[None]:
    """Fail a test that leaves a thread or a child process running after it ends.

    A leaked HostWorker, notifier or agent would otherwise pass unnoticed and
    disturb later tests. Stopping takes a moment, so this polls with a deadline.
    """
    threads, children = set(threading.enumerate()), _children()
    yield

    def leaks() -> tuple[list[threading.Thread], set[int]]:
        return [t for t in threading.enumerate() if t not in threads and t.is_alive()], _children() - children

    if not poll_until(lambda: leaks() == ([], set()), 10.0):
        extra, procs = leaks()
        pytest.fail(f"test leaked threads {[t.name for t in extra]} and processes {sorted(procs)}")
