"""A drop found when its run ends and resolved before the next sample is still counted.

The agent announces the verdict the detector reached just before a source's next run starts
(``Detector.judged``): a drop that the next run then resolves within one sample step is
counted in ``acceptmon_findings_total`` though no evaluation at a sample time saw it active.
Backfill counts that verdict too, so its samples keep equal to the agent's (hypothesis found
this log: seed 38773, run levels 2.4, 1.7, 2.3, one sample every 5 minutes).
"""

from __future__ import annotations

import tempfile
from datetime import datetime
from pathlib import Path

import pytest

from tests.unit.apps.backfill import test_history_truth as truth


class _Day(datetime):
    """The day hypothesis found the log on (the log is dated three days before "now")."""

    @classmethod
    def now(cls, tz: object = None) -> _Day:
        return cls(2026, 12, 4, 12)


def test_a_verdict_resolved_within_a_step_is_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(truth, "datetime", _Day)
    lines = truth._runs_log(38773, (2.4, 1.7, 2.3))
    with tempfile.TemporaryDirectory() as tmp:
        truth._replay(Path(tmp), lines, 300.0, 300)
