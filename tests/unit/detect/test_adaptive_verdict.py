"""`acceptmon runs` on adaptive speculation: the verdict judges runs, not the server's step changes.

On main a log ending in a step-down (the same prompt mix as before the restart) (a hard stretch of prompts) read WORSE, accept len −40%,
segment against segment, and exited 3: a deploy gate failed on the server's own reaction."""

from __future__ import annotations

from pathlib import Path

import pytest

from acceptmon.cli import main
from tests.golden.detect_cases import Log, adaptive_decode


def _log(tmp_path: Path, worse_draft: bool) -> Path:
    log = Log(25)
    log.start(speculative_adaptive=True)
    adaptive_decode(log, [(150, 0.7), (80, 0.57), (100, 0.7)], 3)
    log.stop()
    extra = {"speculative_draft_model_path": "/models/small"} if worse_draft else {}
    log.start(speculative_adaptive=True, **extra)
    adaptive_decode(log, [(120, 0.55 if worse_draft else 0.7), (40, 0.45 if worse_draft else 0.57)], 3)
    path = tmp_path / "server.log"
    path.write_text("\n".join(log.lines) + "\n")
    return path


def test_a_step_down_at_the_end_is_not_a_worse_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["runs", "--timezone", "UTC", str(_log(tmp_path, False))])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "verdict: r4 vs r1: SAME, per-token acceptance" in out.replace("\n  ", " ")


def test_a_worse_draft_under_adaptive_steps_is_worse(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["runs", "--timezone", "UTC", str(_log(tmp_path, True))])
    out = capsys.readouterr().out.replace("\n  ", " ")
    assert code == 3, out
    assert "verdict: r4 vs r1: WORSE, per-token acceptance" in out
