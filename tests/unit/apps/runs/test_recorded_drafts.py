"""Offline attribution tells what it knows (issue 25 item 1): a draft config that was not read
is said to be unread, never "no change"; ``--state-dir`` reads the draft configs an agent
recorded at each start, so ``acceptmon runs`` and ``/api/runs`` name the same change; a
``--draft-config`` that cannot be read is exit 2."""

from __future__ import annotations

import json
import os
import random
from datetime import UTC, datetime, timedelta
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from acceptmon.apps.agent.agent import Agent
from acceptmon.apps.agent.api import _runs as api_runs
from acceptmon.apps.runs import BAD_SOURCE
from acceptmon.apps.runs import main as runs_main
from acceptmon.settings import from_mapping
from acceptmon.testing import synth

KEY = "draft.eagle_config.eagle_aux_hidden_state_layer_ids"
DEMO = str(resources.files("acceptmon.apps.demo.data").joinpath("demo-eagle3-incident.log"))


def _layers(ids: list[int]) -> dict[str, Any]:
    return {
        "architectures": ["LlamaForCausalLMEagle3"],
        "eagle_config": {"eagle_aux_hidden_state_layer_ids": ids},
    }


def _json(capsys: pytest.CaptureFixture[str], *args: str, **kw: Any) -> dict[str, Any]:
    capsys.readouterr()
    assert runs_main(list(args), fmt="json", tz=UTC, **kw) == 0
    (doc,) = json.loads(capsys.readouterr().out)["sources"]
    assert isinstance(doc, dict)
    return doc


def test_the_demo_log_says_the_draft_config_was_not_read(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _json(capsys, DEMO)
    changes = [r["change"] for r in doc["runs"]]
    assert changes[0] == "first run seen"
    for change in changes[1:]:
        assert "draft config not read: a change inside it cannot be seen" in change
        assert "or draft config" not in change


def test_a_missing_draft_config_file_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert runs_main([DEMO], fmt="plain", tz=UTC, draft_config=[str(tmp_path / "nope.json")]) == BAD_SOURCE
    err = capsys.readouterr().err
    assert "--draft-config" in err and "nope.json" in err
    assert runs_main([DEMO], fmt="plain", tz=UTC, state_dir=str(tmp_path / "none")) == BAD_SOURCE


def _start(log: Path, draft: Path, day: int, level: float) -> None:
    ts = datetime(2026, 11, day, 9, 0, 0)
    lines = synth.startup(ts, seed=day, speculative_draft_model_path=str(draft))
    lines += synth.traffic(random.Random(day), ts + timedelta(seconds=50), 90, level, spread=0.05)
    lines += synth.shutdown(ts + timedelta(seconds=400))
    with log.open("a") as out:
        out.write("\n".join(lines) + "\n")


def test_runs_with_the_agents_state_names_the_draft_key_as_api_runs_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    draft = tmp_path / "draft"
    draft.mkdir()
    log = tmp_path / "server.log"
    state = tmp_path / "state"
    settings = {
        "state_dir": str(state),
        "sources": [{"path": str(log), "name": "gpu", "timezone": "UTC"}],
    }
    agent = Agent(from_mapping(settings))
    tracker = agent.tracker
    try:
        agent.open()
        # The draft's config.json as it was at each start, read by the agent as the server did.
        for day, ids, level in ((1, [2, 30, 58], 2.4), (2, [-1, 2, 30], 1.6), (3, [2, 30, 58], 2.4)):
            (draft / "config.json").write_text(json.dumps(_layers(ids)))
            _start(log, draft, day, level)
            agent.step()
        served = api_runs(agent)
    finally:
        agent.close()
    assert [r.run_id for r in tracker.runs("gpu")] == ["r1", "r2", "r3"]

    # Offline alone, today's file (written before r3) cannot tell what r1 and r2 loaded: said so.
    alone = {r["run_id"]: r for r in _json(capsys, str(log))["runs"]}
    for run_id in ("r2", "r3"):
        assert alone[run_id]["change"] == (
            "no change visible in server_args; draft config not read: a change inside it cannot be seen"
        )
    # With what the agent recorded at each start, the CLI names the key as /api/runs does.
    doc = _json(capsys, str(log), state_dir=str(state))
    offline = {r["run_id"]: r for r in doc["runs"]}
    assert KEY in offline["r2"]["changed_keys"] and KEY in offline["r3"]["changed_keys"]
    assert "[2, 30, 58] → [-1, 2, 30]" in offline["r2"]["change"]
    assert [row["run_id"] for row in served] == ["r1", "r2", "r3"]
    for row in served:
        assert row["change"] == offline[row["run_id"]]["change"]
        assert row["changed_keys"] == offline[row["run_id"]]["changed_keys"]
    pytest.importorskip("pandas")
    from acceptmon.apps.frames import read_runs

    frame = read_runs(str(log), timezone="UTC", state_dir=str(state))
    assert list(frame["change"]) == [r["change"] for r in doc["runs"]]

    pytest.importorskip("matplotlib")
    from acceptmon.apps.report import main as report_main

    page = tmp_path / "report.html"
    assert report_main([str(log)], out=str(page), png_dir=None, tz=UTC, state_dir=str(state)) == 0
    html = page.read_text()
    assert KEY in html and "draft config not read" not in html


def test_a_draft_config_older_than_every_start_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    draft = tmp_path / "draft"
    draft.mkdir()
    (draft / "config.json").write_text(json.dumps(_layers([2, 30, 58])))
    os.utime(draft / "config.json", (1_700_000_000, 1_700_000_000))  # Nov 2023: before every start
    log = tmp_path / "server.log"
    for day in (1, 2):
        _start(log, draft, day, 2.4)
    runs = _json(capsys, str(log))["runs"]
    assert runs[1]["change"] == "no change visible in server_args or draft config"  # known, and true
