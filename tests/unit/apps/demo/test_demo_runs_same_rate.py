"""``acceptmon demo`` and ``acceptmon runs`` give one run the same numbers: one per-run summary (RunTable)."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest

from acceptmon.apps import demo
from acceptmon.cli import main


def test_demo_and_runs_print_the_same_accept_rate_for_each_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = resources.files("acceptmon.apps.demo.data")
    log = tmp_path / "server.log"
    log.write_bytes(data.joinpath(demo.DEMO_LOG).read_bytes())
    drafts = []
    for i, snapshot in enumerate(json.loads(data.joinpath(demo.DRAFT_CONFIGS).read_text())["snapshots"]):
        drafts += ["--draft-config", str(tmp_path / f"draft-{i}.json")]
        (tmp_path / f"draft-{i}.json").write_text(json.dumps(snapshot))

    assert main(["demo", "--plain"]) == 0
    shown = {
        r[0]: r for r in (line.split(" | ") for line in capsys.readouterr().out.splitlines()) if len(r) == 7
    }
    assert main(["runs", "--format", "json", "--timezone", "UTC", *drafts, str(log)]) in (0, 3)
    (log_doc,) = json.loads(capsys.readouterr().out)["sources"]
    runs = log_doc["runs"]

    assert [r["run_id"] for r in runs] == ["r1", "r2", "r3"]
    for run in runs:
        row = shown[run["run_id"]]
        assert row[2] == str(run["intervals"])
        assert row[3] == f"{run['accept_len_median']:.2f}"
        assert row[4] == f"{run['accept_rate']:.0%}"
        assert row[6] == run["change"]
    # Not only as printed: the demo's numbers are the runs table's, request-weighted.
    _pipeline, table, _findings = demo.replay()
    assert [s.accept_rate() for s in table.of(demo.SOURCE)] == [r["accept_rate"] for r in runs]
