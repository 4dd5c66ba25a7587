"""The bundled demo tells the guide's story: 47% → 19% → 47%, and names the key."""

from __future__ import annotations

import pytest

from acceptmon.cli import main


def test_demo_summary_and_finding(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--plain"]) == 0
    out = capsys.readouterr().out
    rows = [line.split(" | ") for line in out.splitlines() if line[:1] == "r" and line[1:2].isdigit()]
    assert [r[0] for r in rows] == ["r1", "r2", "r3"]
    assert [r[4] for r in rows] == ["47%", "19%", "48%"]
    assert "[2, 30, 58] → [-1, 2, 30]" in rows[1][6]
    assert "CRITICAL acceptance_drop_after_change [r2 vs r1] resolved" in out
    assert "draft.eagle_config.eagle_aux_hidden_state_layer_ids" in out
