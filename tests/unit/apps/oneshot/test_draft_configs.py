"""oneshot snapshots the draft config.json as the agent does, so its findings name a change inside it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from acceptmon.cli import main

DATA = Path(__file__).resolve().parents[4] / "acceptmon" / "apps" / "demo" / "data"


def test_findings_on_the_demo_log_name_the_changed_layer_ids(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = []
    for i, snap in enumerate(json.loads((DATA / "demo-draft-configs.json").read_text())["snapshots"]):
        (tmp_path / f"s{i}.json").write_text(json.dumps(snap))
        args += ["--draft-config", str(tmp_path / f"s{i}.json")]
    log = str(DATA / "demo-eagle3-incident.log")
    assert main(["oneshot", "--format", "findings", "--timezone", "UTC", *args, log]) == 0
    findings = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    drops = [f for f in findings if f["rule"] == "acceptance_drop_after_change"]
    assert drops and drops[0]["changed_keys"] == ["draft.eagle_config.eagle_aux_hidden_state_layer_ids"]
