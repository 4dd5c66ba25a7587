"""End-to-end golden cases: ``oneshot`` output must match the stored files.

``ACCEPTMON_UPDATE_GOLDEN=1 pytest tests/golden`` rewrites the expected
files; review the diff before committing. The detector's findings are pinned
(``expected.findings.jsonl``) in the cases that have the file.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

import pytest
import yaml

from acceptmon.cli import main

HERE = Path(__file__).parent
CASES = sorted(p.name for p in HERE.iterdir() if (p / "input.log").exists())
UPDATE = os.environ.get("ACCEPTMON_UPDATE_GOLDEN") == "1"


def _run(case: str, fmt: str, capsys: pytest.CaptureFixture[str]) -> str:
    cfg_path = HERE / case / "config.yaml"
    cfg = yaml.safe_load(cfg_path.read_text()) if cfg_path.exists() else {}
    argv = ["oneshot", "--format", fmt, "--name", case, "--timezone", "UTC"]
    if "year" in cfg:
        argv += ["--year", str(cfg["year"])]
    assert main([*argv, str(HERE / case / "input.log")]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("fmt", ["prom", "jsonl", "findings"])
@pytest.mark.parametrize("case", CASES)
def test_golden(case: str, fmt: str, capsys: pytest.CaptureFixture[str]) -> None:
    expected = HERE / case / ("expected.findings.jsonl" if fmt == "findings" else f"expected.{fmt}")
    if fmt == "findings" and not expected.exists():
        pytest.skip("no pinned findings for this case")
    got = _run(case, fmt, capsys)
    if UPDATE:
        expected.write_text(got)
    assert expected.exists(), f"{expected} missing: run with ACCEPTMON_UPDATE_GOLDEN=1"
    want = expected.read_text()
    if got != want:
        diff = "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True), "want", "got"))
        pytest.fail(f"{case}/{fmt} differs (-want +got):\n{diff[:8000]}")
