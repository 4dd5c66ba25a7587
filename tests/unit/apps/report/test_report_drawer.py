"""The report's plots are drawn by a child forked before the logs are read: the reading
process never imports matplotlib or numpy, and the page is byte for byte the one drawn here."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from acceptmon import children
from acceptmon.cli import main
from acceptmon.testing.many_runs import many_runs

#: Run the report in a fresh interpreter and say which heavy modules it imported.
_PROBE = """
import sys
from acceptmon.cli import main
assert main(["report", "--timezone", "UTC", sys.argv[1], "-o", sys.argv[2]]) == 0
print(sorted(m for m in ("numpy", "matplotlib", "acceptmon.apps.report.plots") if m in sys.modules))
"""


@pytest.fixture
def log(tmp_path: Path) -> str:
    path = str(tmp_path / "runs.log")
    many_runs(path, 6, intervals=40, levels=(3.0, 1.8))  # a drop: a finding marked too
    return path


def test_the_reading_process_never_imports_matplotlib(log: str, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, log, str(out)], capture_output=True, text=True, check=True
    )
    imported = done.stdout.splitlines()[-1]
    if (os.cpu_count() or 1) >= 2:
        assert imported == "[]", done.stderr
    else:  # one core: drawn here
        assert "matplotlib" in imported
    assert out.read_text().count('<figure class="plot"') == 3


def test_the_page_drawn_beside_is_the_page_drawn_here(
    log: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    beside_page, here_page = tmp_path / "beside.html", tmp_path / "here.html"
    assert main(["report", "--timezone", "UTC", log, "-o", str(beside_page)]) == 0
    monkeypatch.setattr(children, "forkable", lambda: False)
    assert main(["report", "--timezone", "UTC", log, "-o", str(here_page)]) == 0
    assert beside_page.read_bytes() == here_page.read_bytes()
    assert "finding" in here_page.read_text()
