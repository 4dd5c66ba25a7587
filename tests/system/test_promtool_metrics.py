"""``oneshot`` output passes the real ``promtool check metrics`` with no warnings."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, SAMPLES
from tests.support.tools import require_tool

INPUTS = sorted(SAMPLES.glob("*.log")) + sorted((ROOT / "tests" / "golden").glob("*/input.log"))


@pytest.mark.parametrize("path", INPUTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_exposition_lints_clean(path: Path) -> None:
    promtool = require_tool("promtool")
    exposition = subprocess.run(
        [sys.executable, "-m", "acceptmon", "oneshot", str(path)], capture_output=True, check=True
    ).stdout
    assert b"acceptmon_decode_batches_total" in exposition
    lint = subprocess.run([promtool, "check", "metrics"], input=exposition, capture_output=True, check=False)
    assert lint.returncode == 0, lint.stderr.decode() + lint.stdout.decode()
    assert lint.stdout.strip() == b"" and lint.stderr.strip() == b"", (lint.stdout + lint.stderr).decode()


def test_all_samples_in_one_exposition_lint_clean() -> None:
    promtool = require_tool("promtool")
    args = [sys.executable, "-m", "acceptmon", "oneshot", *map(str, INPUTS)]
    exposition = subprocess.run(args, capture_output=True, check=True).stdout
    lint = subprocess.run([promtool, "check", "metrics"], input=exposition, capture_output=True, check=False)
    assert lint.returncode == 0 and not lint.stdout.strip() and not lint.stderr.strip()
