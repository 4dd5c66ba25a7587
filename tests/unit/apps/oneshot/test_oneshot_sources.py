"""``acceptmon oneshot`` takes SOURCEs as ``acceptmon runs`` does: rotated sets (compressed ones
too), globs, ``-``; a log split over its rotations prints exactly what the whole log prints."""

from __future__ import annotations

import bz2
import gzip
import os
import subprocess
import sys
from pathlib import Path

import pytest

from acceptmon.cli import main

GOLDEN = Path(__file__).resolve().parents[3] / "golden" / "eagle3-incident"
ARGS = ["--name", "eagle3-incident", "--timezone", "UTC"]


def _split(directory: Path, compress: str = "gz") -> Path:
    """The golden log as logrotate leaves it: server.log.2.<compress> (oldest), server.log.1, server.log."""
    lines = (GOLDEN / "input.log").read_bytes().splitlines(keepends=True)
    third = len(lines) // 3
    opener = {"gz": gzip.open, "bz2": bz2.open}[compress]
    with opener(directory / f"server.log.2.{compress}", "wb") as f:
        f.write(b"".join(lines[:third]))
    (directory / "server.log.1").write_bytes(b"".join(lines[third : 2 * third]))
    (directory / "server.log").write_bytes(b"".join(lines[2 * third :]))
    # Names alone would sort server.log.1 first: the order comes from age.
    os.utime(directory / f"server.log.2.{compress}", (1_000_000, 1_000_000))
    os.utime(directory / "server.log.1", (2_000_000, 2_000_000))
    return directory / "server.log*"


@pytest.mark.parametrize("compress", ["gz", "bz2"])
def test_a_rotated_set_is_one_log_read_oldest_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], compress: str
) -> None:
    pattern = _split(tmp_path, compress)
    assert main(["oneshot", *ARGS, str(pattern)]) == 0
    assert capsys.readouterr().out == (GOLDEN / "expected.prom").read_text()


def test_findings_of_a_rotated_set_are_the_whole_logs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["oneshot", "--format", "findings", *ARGS, str(GOLDEN / "input.log")]) == 0
    whole = capsys.readouterr().out
    assert main(["oneshot", "--format", "findings", *ARGS, str(_split(tmp_path))]) == 0
    assert capsys.readouterr().out == whole and "acceptance_drop_after_change" in whole


def _cli(*args: str, stdin: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    with open(stdin or os.devnull, "rb") as f:
        return subprocess.run(
            [sys.executable, "-m", "acceptmon", "oneshot", *args],
            stdin=f,
            capture_output=True,
            timeout=120,
            check=False,
        )


@pytest.mark.parametrize("fmt", ["prom", "jsonl"])
def test_standard_input_reads_like_the_file(fmt: str) -> None:
    piped = _cli("--format", fmt, *ARGS, "-", stdin=GOLDEN / "input.log")
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout.decode() == (GOLDEN / f"expected.{fmt}").read_text()


def test_a_name_cannot_label_a_glob_of_several_logs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a.log").write_text("x\n")
    (tmp_path / "b.log").write_text("y\n")
    assert main(["oneshot", "--name", "one", str(tmp_path / "*.log")]) == 2
    err = capsys.readouterr().err
    assert "names 2 logs" in err and len(err.strip().splitlines()) == 1


def test_sources_that_name_nothing_exit_2_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["oneshot", str(tmp_path / "absent.log")]) == 2
    assert capsys.readouterr().err.strip() == f"acceptmon: {tmp_path / 'absent.log'}: no such file"
    assert main(["oneshot", str(tmp_path / "*.log")]) == 2
    assert "matches no file" in capsys.readouterr().err


def test_a_path_that_exists_is_read_as_given_glob_characters_and_all(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    odd = tmp_path / "server[1].log"
    odd.write_bytes((GOLDEN / "input.log").read_bytes())
    (tmp_path / "server1.log").write_text("not this one\n")
    assert main(["oneshot", *ARGS, str(odd)]) == 0
    assert capsys.readouterr().out == (GOLDEN / "expected.prom").read_text()


def test_a_damaged_compressed_file_is_a_problem_not_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "server.log.1.gz").write_bytes(gzip.compress(b"x\n" * 1000)[:-30] + b"\0" * 30)
    (tmp_path / "server.log.2.xz").write_bytes(b"\xfd7zXZ\0 not really")
    done = _cli(str(tmp_path / "server.log.*"))
    err = done.stderr.decode()
    assert done.returncode == 1, err
    assert "Traceback" not in err
    assert err.count("acceptmon: cannot read") == 2
