"""``acceptmon report``: what it refuses before drawing anything."""

from __future__ import annotations

from pathlib import Path

import pytest

from acceptmon.cli import main


def test_a_destination_is_required(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "x.log"]) == 2
    assert "-o report.html and/or --png DIR" in capsys.readouterr().err


def test_a_missing_source_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(tmp_path / "nope.log"), "-o", str(tmp_path / "r.html")]) == 2
    assert "no such file" in capsys.readouterr().err and not (tmp_path / "r.html").exists()
