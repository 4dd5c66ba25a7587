"""``acceptmon check-config`` prints names and problems from a settings file with control characters
escaped: a name or key pasted with terminal escapes does not act on the terminal."""

from __future__ import annotations

from pathlib import Path

import pytest

from acceptmon.cli import main
from tests.support.hostile_text import UNSAFE


def test_ok_line_escapes_a_hostile_source_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "acceptmon.yaml"
    cfg.write_text(
        'sources:\n  - path: /var/log/x.log\n    name: "gpu\\e]52;c;cHduZWQ=\\a\\u202e"\n'
        f"state_dir: {tmp_path / 'state'}\n"
    )
    assert main(["check-config", str(cfg)]) == 0
    out = capsys.readouterr().out
    assert not UNSAFE.findall(out) and r"gpu\x1b]52;c;cHduZWQ=\x07\u202e" in out


def test_problems_escape_a_hostile_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "acceptmon.yaml"
    cfg.write_text('"poll\\e[2J_interval": 1\nsources: [/var/log/x.log]\n')
    assert main(["check-config", str(cfg)]) != 0
    err = capsys.readouterr().err
    assert not UNSAFE.findall(err.replace("\n", "")), err
    assert "\\x1b[2J" in err
