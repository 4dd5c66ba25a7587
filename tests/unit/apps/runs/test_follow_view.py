"""The ``runs --follow`` view uses the terminal's width for "opened by" and says the verdict
against the last good run, as the plain table does (issue 25 §10)."""

from __future__ import annotations

import io
from datetime import UTC
from importlib import resources

from rich.console import Console

from acceptmon.apps.runs import live
from acceptmon.ingest.read import collect
from acceptmon.sources.files import expand

DEMO = str(resources.files("acceptmon.apps.demo.data").joinpath("demo-eagle3-incident.log"))


def _render(width: int) -> tuple[str, str]:
    """The view at ``width`` columns, and what opened r2 (longer than 40 columns)."""
    logs = expand(DEMO)
    _, table, _ = collect(logs, UTC)
    console = Console(file=io.StringIO(), width=width, color_system=None)
    console.print(live.view(table, logs))
    out = console.file.getvalue()
    assert isinstance(out, str)
    change = table.of(logs[0].name)[1].change()
    assert len(change) > 60
    return out, change


def test_opened_by_takes_the_width_there_is() -> None:
    wide, change = _render(160)
    assert change in wide  # one line: not folded at 40 columns
    narrow, _ = _render(80)
    assert change not in narrow and max(len(line) for line in narrow.splitlines()) <= 80


def test_the_last_good_run_is_said() -> None:
    out, _ = _render(160)
    assert "verdict: r3 vs r2: BETTER" in out
    assert "against the last good run: r3 vs r1: SAME" in out
