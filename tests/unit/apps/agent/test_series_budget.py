"""The series budget: a glob matching more files than ``max_exported_sources`` exports per-source
series for that many sources only; the others are still read and counted, not exported.

A glob matching 5,000 files made /metrics 23 MB (about 45 series per file) and a scrape 2-6 s.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from acceptmon.apps.agent.agent import Agent
from acceptmon.apps.agent.api import metrics_text as _metrics
from acceptmon.settings import (
    DEFAULT_MAX_EXPORTED_SOURCES,
    Settings,
    SettingsError,
    from_mapping,
)
from acceptmon.settings.sources import SourceSettings
from acceptmon.testing import synth

T0 = datetime(2026, 11, 28, 9, 0, 0)
FILES, BUDGET = 30, 10
SOURCE = re.compile(r'source="(app:[^"]*)"')


def sources(text: str) -> set[str]:
    """Sources with per-source series (findings included: every file here is stalled)."""
    return {m for x in text.splitlines() for m in SOURCE.findall(x)}


def write_logs(root: Path) -> int:
    logs = root / "logs"
    logs.mkdir()
    lines = [
        *synth.startup(T0, 1),
        *(synth.decode_line(T0 + timedelta(seconds=30 + i), 2.5) for i in range(4)),
    ]
    for i in range(FILES):
        (logs / f"server-{i:03d}.log").write_text("".join(line + "\n" for line in lines))
    return FILES * len(lines)


def scrape(root: Path, budget: int, watched_s: float = 0.0) -> str:
    """The agent's /metrics once the logs are read; ``watched_s``: after that much more time
    (a silent log stalls once the agent has watched it silent for ``stall_s``)."""
    settings = Settings(
        state_dir=str(root / "state"),
        sources=(SourceSettings(path=str(root / "logs" / "*.log"), name="app"),),
        max_exported_sources=budget,
    )
    agent = Agent(settings)
    agent.open()
    try:
        while agent.step():
            pass
        if watched_s:
            agent.evaluate()  # the stall clock starts ...
            agent.detector.evaluate(datetime.now(UTC) + timedelta(seconds=watched_s))
            agent.evaluate()  # ... and what it found since is announced
        return _metrics(agent)
    finally:
        agent.close()


def value(text: str, name: str) -> float:
    line = next(x for x in text.splitlines() if x.startswith(name + " "))
    return float(line.rsplit(" ", 1)[1])


def lines_exported(text: str) -> float:
    return sum(
        float(x.rsplit(" ", 1)[1]) for x in text.splitlines() if x.startswith("acceptmon_lines_total{")
    )


def test_sources_beyond_the_budget_are_read_and_counted_not_exported(tmp_path: Path) -> None:
    total = write_logs(tmp_path)
    text = scrape(tmp_path, BUDGET)
    exported = sources(text)
    assert len(exported) == BUDGET, f"per-source series for {len(exported)} sources"
    assert sum(x.startswith("acceptmon_finding_active{") for x in text.splitlines()) <= BUDGET
    assert value(text, "acceptmon_sources_over_budget") == FILES - BUDGET
    # every line was read: the exported sources' lines plus the over-budget ones
    assert lines_exported(text) + value(text, "acceptmon_sources_over_budget_lines_total") == total
    per_source = sum(1 for x in text.splitlines() if 'source="app:' in x)
    assert per_source <= BUDGET * 60

    # After a restart (from the checkpoint) the very same sources are exported.
    again = scrape(tmp_path, BUDGET, Settings().detect.stall_s + 1)
    assert sources(again) == exported
    assert value(again, "acceptmon_sources_over_budget") == FILES - BUDGET
    # every file has stalled by now (issue 25: once watched silent for stall_s): findings fire for all 30, and show for the 10 exported only
    assert sum(x.startswith("acceptmon_finding_active{") for x in again.splitlines()) == BUDGET


def test_within_the_budget_every_source_is_exported(tmp_path: Path) -> None:
    total = write_logs(tmp_path)
    text = scrape(tmp_path, FILES)
    assert len(sources(text)) == FILES
    assert value(text, "acceptmon_sources_over_budget") == 0
    assert value(text, "acceptmon_sources_over_budget_lines_total") == 0
    assert lines_exported(text) == total


def test_the_budget_setting_is_validated() -> None:
    assert from_mapping({"sources": ["x.log"]}).max_exported_sources == DEFAULT_MAX_EXPORTED_SOURCES
    assert from_mapping({"sources": ["x.log"], "max_exported_sources": 3}).max_exported_sources == 3
    for bad in (0, -1, 2.5, True, "many", 10**7):
        with pytest.raises(SettingsError, match="max_exported_sources"):
            from_mapping({"sources": ["x.log"], "max_exported_sources": bad})
