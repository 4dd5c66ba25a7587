"""``acceptmon report`` on a log of 2,000 runs: a bounded page of bounded plots."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from acceptmon import children
from acceptmon.cli import main
from acceptmon.testing.many_runs import many_runs


@pytest.fixture
def artists(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The number of artists in each figure the report saves."""
    from matplotlib.figure import Figure

    counts: list[int] = []
    save = Figure.savefig

    def counting(fig: Figure, *args: Any, **kwargs: Any) -> None:
        counts.append(len(fig.findobj()))
        save(fig, *args, **kwargs)

    # Every figure is drawn here, where this spy sees it (not beside, in a forked child).
    monkeypatch.setattr(children, "forkable", lambda: False)
    monkeypatch.setattr(Figure, "savefig", counting)
    yield counts


def test_two_thousand_runs_make_a_bounded_report(
    tmp_path: Path, artists: list[int], capsys: pytest.CaptureFixture[str]
) -> None:
    log, out = tmp_path / "many.log", tmp_path / "r.html"
    many_runs(str(log), 2000, intervals=5)
    assert main(["report", "--timezone", "UTC", str(log), "-o", str(out)]) == 0
    assert "internal error" not in capsys.readouterr().err
    assert len(artists) == 6 and max(artists) < 1000, artists  # three plots, light and dark
    page = out.read_text()
    assert len(page) < 2_000_000
    assert "2000 runs" in page and "1800 earlier runs left out: acceptmon runs lists every run" in page
    assert "the latest 30 of 2000 runs" in page and "r2000" in page
    assert "2000 of them: the table names them" in page


def test_findings_listed_are_the_latest_with_a_note(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log, out = tmp_path / "drops.log", tmp_path / "r.html"
    many_runs(str(log), 150, intervals=60, levels=(3.2, 1.6))  # every other run a drop
    assert main(["report", "--timezone", "UTC", str(log), "-o", str(out)]) == 0
    page = out.read_text()
    listed = page.count("<p><b>")
    assert listed == 50, listed
    assert "earlier findings left out (acceptmon oneshot --format findings lists them all)" in page
