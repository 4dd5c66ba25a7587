"""`acceptmon runs` exits 2 when its only SOURCE cannot be read: a deploy gate must not pass
on a typo (issue 25 item 2; the README promises 2)."""

from __future__ import annotations

import os
from datetime import UTC
from pathlib import Path

import pytest

from acceptmon.apps.runs import BAD_SOURCE
from acceptmon.apps.runs import main as runs_main
from acceptmon.ingest import read


def test_a_directory_is_no_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert runs_main([str(tmp_path)], fmt="plain", tz=UTC) == BAD_SOURCE
    assert "is a directory" in capsys.readouterr().err


def test_an_unreadable_file_is_no_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "server.log"
    log.write_text("x\n")
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if str(p) == str(log) else real(p, mode))
    assert runs_main([str(log)], fmt="json", tz=UTC) == BAD_SOURCE
    err = capsys.readouterr().err
    assert "permission denied" in err and "Traceback" not in err


def test_a_file_that_fails_as_it_is_read_is_no_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "server.log"
    log.write_text("x\n")

    def refuse(path: str) -> object:
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(read, "open_local", refuse)
    assert runs_main([str(log)], fmt="plain", tz=UTC) == BAD_SOURCE
    assert "cannot read" in capsys.readouterr().err
