"""File names are bytes: a name that is not UTF-8, or holds a newline, breaks no output (issue 19 #1, #16).

A real agent follows a glob over a directory holding ``server-\\xff.log`` and a
name with a newline beside a plain one: every scrape answers 200 with every
file's series, the names shown escaped (``terminal.printable``); the checkpoint
keeps the exact path, so a restart resumes instead of re-reading; a checkpoint
as the code before wrote it (the raw name in every source name) still loads;
and no file name fakes an agent log line. ``oneshot`` and ``backfill`` on such
a name print strict UTF-8.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from acceptmon.testing import synth
from tests.support.agentproc import AgentProcess
from tests.support.tools import require_tool
from tests.support.wait import wait_for

pytestmark = pytest.mark.system

T0 = datetime(2026, 1, 1)
ROOT = Path(__file__).resolve().parents[2]
INCIDENT = ROOT / "tests" / "golden" / "eagle3-incident" / "input.log"
BAD = b"server-\xff.log"
#: A name whose newline would start a fake log line (as an attacker able to create files could).
FORGING = "server-\n2026-01-01 00:00:00,000 ERROR acceptmon.apps.agent: forged.log"


def _write(path: bytes | str, n: int) -> None:
    lines = [synth.server_args_line(T0), *[synth.decode_line(T0, 2.0)] * n]
    with open(path, "ab") as f:
        f.write("".join(line + "\n" for line in lines).encode())


def _batches(agent: AgentProcess) -> dict[str, float]:
    """Decode batches per source label as served (None-safe: a failed scrape is empty)."""
    text = agent.get("/metrics") or ""
    out = {}
    for line in text.splitlines():
        if line.startswith("acceptmon_decode_batches_total{"):
            source = re.search(r'source="((?:[^"\\]|\\.)*)"', line)
            assert source is not None
            out[source.group(1)] = float(line.rsplit(" ", 1)[1])
    return out


def _forged(stderr: str) -> list[str]:
    """Lines that start like a record but were written by a file name."""
    return [line for line in stderr.splitlines() if line.startswith("2026-01-01 00:00:00,000")]


def test_agent_serves_and_restarts_with_undecodable_and_newline_names(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    _write(str(logs / "server-a.log"), 2)
    _write(os.path.join(os.fsencode(logs), BAD), 3)
    _write(str(logs / FORGING), 4)
    want = {
        f"{logs}/*.log:server-a.log": 2.0,
        f"{logs}/*.log:server-\\\\xff.log": 3.0,  # label text escapes the backslash of \xff
        f"{logs}/*.log:server-\\\\n2026-01-01 00:00:00,000 ERROR acceptmon.apps.agent: forged.log": 4.0,
    }
    state = tmp_path / "state"
    agent = AgentProcess(state, [f"{logs}/*.log"])
    try:
        wait_for(lambda: _batches(agent) == want, 20, "every file's series, names escaped")
        runs = agent.api("/api/runs")
        assert runs is not None, "/api/runs failed"
        assert {r["source"] for r in runs} == {k.replace("\\\\", "\\") for k in want}
        assert isinstance(agent.api("/api/findings"), list)
    finally:
        assert agent.stop() == 0
    err = agent.stderr()
    assert "Traceback" not in err and "skipped" not in err, err
    assert not _forged(err), err
    assert "server-\\xff.log" in err  # shown, escaped, in the agent's own log

    # The checkpoint keeps the exact path: a restart resumes (nothing counted twice)...
    saved = json.loads((state / "checkpoint.json").read_text())
    files = next(iter(saved["sources"].values()))["files"]
    assert os.fsdecode(os.path.join(os.fsencode(logs), BAD)) in files
    # ...also from a checkpoint as the code before wrote it: the raw name in every source name.
    text = (state / "checkpoint.json").read_text()
    (state / "checkpoint.json").write_text(text.replace("server-\\\\xff.log", "server-\\udcff.log"))
    again = AgentProcess(state, [f"{logs}/*.log"])
    try:
        _write(os.path.join(os.fsencode(logs), BAD), 1)
        want[f"{logs}/*.log:server-\\\\xff.log"] = 4.0
        wait_for(lambda: _batches(again) == want, 20, "resumed counts from the old-style checkpoint")
        assert again.api("/api/runs") is not None
    finally:
        assert again.stop() == 0

    # The file gone, the agent restarted: still 200, the other files' series still there.
    os.unlink(os.path.join(os.fsencode(logs), BAD))
    third = AgentProcess(state, [f"{logs}/*.log"])
    try:
        wait_for(
            lambda: _batches(third).get(f"{logs}/*.log:server-a.log") == 2.0, 20, "a scrape after removal"
        )
        assert third.api("/api/runs") is not None and third.api("/api/findings") is not None
    finally:
        assert third.stop() == 0
    assert "Traceback" not in again.stderr() + third.stderr()


def test_a_newline_in_a_file_name_fakes_no_log_line(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    _write(str(logs / FORGING), 1)
    agent = AgentProcess(tmp_path / "state", [f"{logs}/*.log", str(logs / FORGING)])
    try:
        wait_for(lambda: len(_batches(agent)) == 2, 20, "both sources' series")
    finally:
        assert agent.stop() == 0
    err = agent.stderr()
    assert "forged.log" in err and not _forged(err), err


def _acceptmon(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "acceptmon", *args], capture_output=True, timeout=300, check=False
    )


def _strict_strings(value: object) -> None:
    """Every string in a JSON value is valid Unicode (no lone surrogate: no raw name got through)."""
    if isinstance(value, str):
        value.encode("utf-8")
    elif isinstance(value, dict):
        for k, v in value.items():
            _strict_strings(k)
            _strict_strings(v)
    elif isinstance(value, list):
        for v in value:
            _strict_strings(v)


@pytest.fixture
def incident(tmp_path: Path) -> str:
    """The golden incident (it raises findings) under a name that is not UTF-8."""
    path = os.path.join(os.fsencode(tmp_path), b"inc-\xff.log")
    shutil.copyfile(INCIDENT, path)
    return os.fsdecode(path)


@pytest.mark.parametrize("fmt", ["prom", "jsonl", "findings"])
def test_oneshot_on_an_undecodable_name(incident: str, fmt: str) -> None:
    done = _acceptmon("oneshot", "--format", fmt, incident)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    out = done.stdout.decode("utf-8")  # strict
    shown = incident.replace("\udcff", "\\xff")
    if fmt == "prom":
        assert f'source="{shown.replace(chr(92), chr(92) * 2)}"' in out
        return
    docs = [json.loads(line) for line in out.splitlines()]
    assert docs and all(d["source"] == shown for d in docs)
    for d in docs:
        _strict_strings(d)
    if fmt == "findings":
        assert any(shown in d["summary"] for d in docs)


def test_backfill_on_an_undecodable_name(incident: str, tmp_path: Path) -> None:
    require_tool("promtool")
    done = _acceptmon("backfill", "--out", str(tmp_path / "out"), incident)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    om = (tmp_path / "out" / "acceptmon.om").read_bytes().decode("utf-8")
    assert 'source="' + incident.replace("\udcff", "\\\\xff") + '"' in om
    assert list((tmp_path / "out" / "blocks").iterdir())
