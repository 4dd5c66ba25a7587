"""The report's progress bar: bytes as they are read, on stderr, only on a terminal."""

from __future__ import annotations

import gzip
import io
from datetime import UTC
from pathlib import Path

import pytest

from acceptmon.apps.report.progress import Tally, counted, reading
from acceptmon.ingest.read import new_pipeline, read_logs
from acceptmon.sources.files import expand
from acceptmon.sources.lines import READ_SIZE


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _log(path: Path, size: int) -> Path:
    line = b"[2026-11-30 00:00:00] noise line that no parser wants, padded to a readable length\n"
    path.write_bytes(line * (size // len(line) + 1))
    return path


def test_a_big_file_advances_chunk_by_chunk_to_its_size(tmp_path: Path) -> None:
    path = _log(tmp_path / "big.log", 3 * READ_SIZE)
    steps: list[tuple[str, int]] = []
    pipeline, _table = new_pipeline(UTC)
    assert read_logs(pipeline, counted(expand(str(path)), lambda p, n: steps.append((p, n)))) == []
    moved = [n for _p, n in steps if n]
    assert len(moved) >= 3 and sum(moved) == path.stat().st_size
    assert {p for p, _n in steps} == {str(path)}


def test_a_compressed_file_moves_the_bar_by_its_size_not_its_content(tmp_path: Path) -> None:
    plain = _log(tmp_path / "x.log", 2 * READ_SIZE).read_bytes()
    packed = tmp_path / "x.log.1.gz"
    packed.write_bytes(gzip.compress(plain))
    shown: list[int] = []
    tally = Tally({str(packed): packed.stat().st_size, "ssh-file": None}, shown.append)
    tally.advance(str(packed), len(plain))
    tally.finish(str(packed))
    assert sum(shown) == packed.stat().st_size
    tally.advance("ssh-file", 10)  # a remote file's size is unknown: its bytes are shown as read
    assert shown[-1] == 10


def test_no_bar_when_stderr_is_not_a_terminal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    logs = expand(str(_log(tmp_path / "a.log", 1000)))
    with reading(logs, "report") as (read, _done):
        assert read is logs
    assert capsys.readouterr() == ("", "")


def test_the_bar_goes_to_stderr_on_a_terminal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    err, out = _Terminal(), io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    monkeypatch.setattr("sys.stdout", out)
    path = _log(tmp_path / "a.log", 2 * READ_SIZE)
    pipeline, _table = new_pipeline(UTC)
    with reading(expand(str(path)), "report") as (read, done):
        assert read_logs(pipeline, read, done) == []
    assert "report" in err.getvalue() and out.getvalue() == ""
