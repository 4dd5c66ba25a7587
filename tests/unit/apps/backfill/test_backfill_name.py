"""``backfill --name``: history carries the agent source's ``name`` as its ``source`` label.

Without it the series were labelled with the path given, so history and the live agent's
series (labelled with the source's configured ``name``) were two series for one log."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from acceptmon import cli
from acceptmon.apps import backfill

DEMO = (
    Path(__file__).resolve().parents[4] / "acceptmon" / "apps" / "demo" / "data" / "demo-eagle3-incident.log"
)


def _sources(om: Path) -> set[str]:
    return set(re.findall(r'source="([^"]*)"', om.read_text(encoding="utf-8")))


def test_every_series_carries_the_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(backfill.shutil, "which", lambda _name: None)  # promtool is not what is tested
    out = tmp_path / "out"
    status = cli.main(["backfill", str(DEMO), "--name", "gpu-7", "--out", str(out), "--timezone", "UTC"])
    assert status == backfill.NO_BLOCKS  # the OpenMetrics is written; blocks want promtool
    assert _sources(out / "acceptmon.om") == {"gpu-7"}


def test_one_name_for_several_logs_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("a.log", "b.log"):
        (tmp_path / name).write_text(DEMO.read_text(encoding="utf-8"), encoding="utf-8")
    glob = str(tmp_path / "*.log")
    status = cli.main(["backfill", glob, "--name", "x", "--out", str(tmp_path / "out"), "--timezone", "UTC"])
    assert status == 2
    assert "one name cannot label them all" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
