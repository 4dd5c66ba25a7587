"""``acceptmon runs`` and its live view print log-derived text with its control characters escaped."""

from __future__ import annotations

import io
import subprocess
import sys
from datetime import UTC
from pathlib import Path

import pytest
from rich.console import Console

from acceptmon.apps.runs.live import view
from acceptmon.cli import main
from acceptmon.ingest.read import collect
from acceptmon.sources.files import Log
from acceptmon.text.printable import printable, printable_lines
from tests.support.hostile_text import UNSAFE, hostile_log


def test_printable_escapes_controls_and_bidi_and_keeps_the_rest() -> None:
    assert printable("a\x1b]52;c;eA==\x07b") == r"a\x1b]52;c;eA==\x07b"
    assert printable("\x9b2J \u202eevil \u2066x\u2069") == r"\u009b2J \u202eevil \u2066x\u2069"
    assert printable_lines("one\ntwo\t") == "one\ntwo\\t"
    assert printable("Qwen3-32B ▁▂▃ é 中文 $x$ [b]") == "Qwen3-32B ▁▂▃ é 中文 $x$ [b]"


def test_runs_table_prints_no_escapes_from_a_hostile_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = hostile_log(tmp_path / "server.log")
    main(["runs", "--timezone", "UTC", str(log)])
    out, err = capsys.readouterr()
    assert not UNSAFE.findall(out + err), [m for m in UNSAFE.findall(out + err)]
    assert r"+args.clip\x1b]52;c;cHduZWQ=\x07" in out and r"\u202eevil" in out
    assert "markup[/bold][link=http://x]" in out


def test_runs_warnings_on_stderr_escape_the_log_text_they_quote(tmp_path: Path) -> None:
    log = hostile_log(tmp_path / "server.log")
    cmd = [sys.executable, "-m", "acceptmon", "runs", "--timezone", "UTC", str(log)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert "no config.json here" in done.stderr and r"/models/d\x1b]52" in done.stderr
    assert not UNSAFE.findall(done.stdout + done.stderr), UNSAFE.findall(done.stderr)


def test_live_view_renders_no_escapes_and_no_markup_from_a_hostile_log(tmp_path: Path) -> None:
    log = hostile_log(tmp_path / "server.log")
    logs = [Log(str(log), (str(log),))]
    _pipeline, table, _problems = collect(logs, UTC, None, {})
    buf = io.StringIO()
    console = Console(file=buf, width=200, force_terminal=False, color_system=None)
    console.print(view(table, logs))
    text = buf.getvalue()
    assert not UNSAFE.findall(text), UNSAFE.findall(text)
    assert "markup[/bold][link=http://x]" in text and r"\x1b]52" in text
