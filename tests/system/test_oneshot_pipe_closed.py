"""``acceptmon oneshot … | head`` exits quietly as Unix tools do: a reader that leaves is not a
parse error of the log nor a read problem (issue 25 §10)."""

import subprocess
import sys
from pathlib import Path

import pytest

import acceptmon.apps.demo

DEMO_LOG = Path(acceptmon.apps.demo.__file__).parent / "data" / "demo-eagle3-incident.log"


@pytest.mark.parametrize("fmt", ["jsonl", "prom"])
def test_closed_stdout_ends_quietly(fmt: str, tmp_path: Path) -> None:
    args = [sys.executable, "-m", "acceptmon", "oneshot", "--format", fmt]
    with (tmp_path / "err").open("wb") as err:
        proc = subprocess.Popen([*args, str(DEMO_LOG)], stdout=subprocess.PIPE, stderr=err)
        assert proc.stdout is not None
        assert proc.stdout.readline()  # like `head -1`: one line, then the reader goes away
        proc.stdout.close()
        rc = proc.wait(timeout=60)
    stderr = (tmp_path / "err").read_text()
    assert rc == 0, stderr
    assert "BrokenPipe" not in stderr
    assert "record skipped" not in stderr
    assert "cannot read" not in stderr
    assert "Exception ignored" not in stderr
