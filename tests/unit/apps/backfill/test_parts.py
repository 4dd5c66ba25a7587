"""``backfill`` writes history in parts by time, each made into blocks while the logs are read.

Each part is a whole OpenMetrics document on its own (``# EOF``, each family's TYPE and HELP);
together they hold exactly the one document's samples, and no two parts share an instant. A
promtool that fails, cannot run or is missing gives the message and exit status it always
did; a part that cannot be written exits 1; and whatever ends the reading (an error, Ctrl-C),
no promtool is left running. promtool here is a stand-in script that logs its arguments.
"""

from __future__ import annotations

import errno
import os
import re
import threading
from itertools import pairwise
from pathlib import Path
from typing import IO

import pytest

from acceptmon import cli
from acceptmon.apps import backfill
from acceptmon.apps.backfill import blocks, openmetrics, parts
from acceptmon.apps.backfill.blocks import Blocks
from tests.support.wait import wait_for

DEMO = (
    Path(__file__).resolve().parents[4] / "acceptmon" / "apps" / "demo" / "data" / "demo-eagle3-incident.log"
)

#: One sample: (name, sorted labels, timestamp, value).
Sample = tuple[str, tuple[tuple[str, str], ...], float, float]


def _promtool(tmp_path: Path, body: str) -> Path:
    """A stand-in promtool: logs each call's part (its second-to-last argument), then runs ``body``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "promtool"
    log = 'for a; do part=$out; out=$a; done; echo "$(basename "$part")" >> ' + str(tmp_path / "calls")
    tool.write_text(f"#!/bin/sh\n{log}\n{body}\n")
    tool.chmod(0o755)
    return tool


def _calls(tmp_path: Path) -> list[str]:
    calls = tmp_path / "calls"
    return calls.read_text().split() if calls.exists() else []


def _backfill(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, promtool: Path | None) -> int:
    monkeypatch.setattr(backfill.shutil, "which", lambda _name: None if promtool is None else str(promtool))
    return cli.main(
        ["backfill", str(DEMO), "--out", str(tmp_path / "out"), "--timezone", "UTC", "--instance", "h:1"]
    )


def _samples(path: Path) -> list[Sample]:
    """The document's samples, checked whole: it ends with ``# EOF``, declares each family once
    (TYPE, then HELP) before its samples, and every sample belongs to the family declared last."""
    text = path.read_text(encoding="utf-8")
    assert text.endswith("\n# EOF\n") and text.count("# EOF") == 1, path
    out: list[Sample] = []
    declared: list[str] = []
    for line in text.splitlines()[:-1]:
        if line.startswith("# TYPE "):
            declared.append(line.split(" ")[2])
            continue
        if line.startswith("# HELP "):
            assert line.split(" ")[2] == declared[-1]
            continue
        head, value, ts = line.rsplit(" ", 2)
        name, _, labels = head.partition("{")
        assert declared and name.startswith(declared[-1]), (path, line)
        out.append((name, tuple(sorted(re.findall(r'(\w+)="([^"]*)"', labels))), float(ts), float(value)))
    assert len(declared) == len(set(declared)), path
    return out


def test_the_parts_hold_the_whole_history_and_share_no_instant(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = tmp_path / "whole"
    whole.mkdir()
    assert _backfill(whole, monkeypatch, None) == backfill.NO_BLOCKS
    (one,) = (whole / "out").glob("*.om")
    assert one.name == "acceptmon.om"

    monkeypatch.setattr(parts, "PART_POINTS", 60)
    split = tmp_path / "split"
    split.mkdir()
    assert _backfill(split, monkeypatch, _promtool(split, "exit 0")) == 0
    written = sorted((split / "out").glob("*.om"))
    assert [p.name for p in written] == [f"acceptmon-{k:04d}.om" for k in range(1, len(written) + 1)]
    assert len(written) >= 4
    assert _calls(split) == [p.name for p in written]  # each part made into blocks, in order

    pieces = [_samples(p) for p in written]
    assert sorted(s for piece in pieces for s in piece) == sorted(_samples(one))
    spans = [(min(s[2] for s in piece), max(s[2] for s in piece)) for piece in pieces]
    assert all(a[1] < b[0] for a, b in pairwise(spans)), spans


def test_a_rerun_leaves_no_part_of_the_former_history(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(parts, "PART_POINTS", 60)
    assert _backfill(tmp_path, monkeypatch, _promtool(tmp_path, "exit 0")) == 0
    assert len(list((tmp_path / "out").glob("acceptmon-*.om"))) >= 4
    monkeypatch.setattr(parts, "PART_POINTS", 1 << 14)
    assert _backfill(tmp_path, monkeypatch, tmp_path / "bin" / "promtool") == 0
    assert [p.name for p in (tmp_path / "out").glob("*.om")] == ["acceptmon.om"]


def test_a_failing_promtool_is_reported_and_no_other_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(parts, "PART_POINTS", 60)
    tool = _promtool(tmp_path, "echo 'starting'; echo 'block creation: out of order sample' >&2; exit 1")
    assert _backfill(tmp_path, monkeypatch, tool) == backfill.NO_BLOCKS
    err = capsys.readouterr().err
    assert "no TSDB blocks: promtool failed on acceptmon-0001.om: block creation: out of order sample" in err
    assert "Traceback" not in err
    assert _calls(tmp_path) == ["acceptmon-0001.om"]
    assert len(list((tmp_path / "out").glob("acceptmon-*.om"))) >= 4  # the history is all written


def test_a_promtool_that_cannot_run_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    tool = tmp_path / "promtool"
    tool.write_text("#!/nonexistent/interpreter\n")
    tool.chmod(0o755)
    assert _backfill(tmp_path, monkeypatch, tool) == backfill.NO_BLOCKS
    err = capsys.readouterr().err
    assert "no TSDB blocks: cannot run promtool: " in err and "Traceback" not in err


def test_without_promtool_history_is_one_document(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(parts, "PART_POINTS", 60)
    assert _backfill(tmp_path, monkeypatch, None) == backfill.NO_BLOCKS
    assert "promtool is not installed" in capsys.readouterr().err
    assert [p.name for p in (tmp_path / "out").glob("*.om")] == ["acceptmon.om"]


def test_a_part_that_cannot_be_written_exits_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(parts, "PART_POINTS", 60)
    write = openmetrics.Recorder.write
    written: list[object] = []

    def full_disk(self: openmetrics.Recorder, out: IO[str]) -> None:
        written.append(out)
        if len(written) == 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        write(self, out)

    monkeypatch.setattr(openmetrics.Recorder, "write", full_disk)
    assert _backfill(tmp_path, monkeypatch, _promtool(tmp_path, "exit 0")) == 1
    err = capsys.readouterr().err
    assert "cannot write " in err and "acceptmon-0002.om: No space left on device" in err
    assert "Traceback" not in err and "cannot read" not in err
    assert _calls(tmp_path) in ([], ["acceptmon-0001.om"])  # the first one's, if begun, was ended


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_ctrl_c_leaves_no_promtool_running(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parts, "PART_POINTS", 60)
    pid_file = tmp_path / "pid"
    tool = _promtool(tmp_path, f"echo $$ > {pid_file}.tmp && mv {pid_file}.tmp {pid_file}\nexec sleep 600")
    cut = parts.Parts._cut

    def interrupted(self: parts.Parts) -> None:
        cut(self)
        wait_for(pid_file.exists, 30, "promtool to start")
        raise KeyboardInterrupt  # as Ctrl-C arrives while promtool makes the first part's blocks

    monkeypatch.setattr(parts.Parts, "_cut", interrupted)
    assert _backfill(tmp_path, monkeypatch, tool) == 130
    pid = int(pid_file.read_text())
    assert _gone(pid), "promtool is still running"
    assert not [t for t in threading.enumerate() if t.name == "promtool"]


def test_stop_ends_the_running_promtool(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    tool = _promtool(tmp_path, f"echo $$ > {pid_file}.tmp && mv {pid_file}.tmp {pid_file}\nexec sleep 600")
    part = tmp_path / "acceptmon-0001.om"
    part.write_text("# EOF\n")
    shown: list[tuple[int, int]] = []
    blocks = Blocks(str(tool), tmp_path / "blocks", lambda done, added: shown.append((done, added)))
    blocks.add(part)
    blocks.add(part)
    wait_for(pid_file.exists, 30, "promtool to start")
    blocks.stop()
    assert _gone(int(pid_file.read_text()))
    assert _calls(tmp_path) == ["acceptmon-0001.om"]  # the second part never started
    assert shown[:2] == [(0, 1), (0, 2)]


def test_promtool_is_niced_while_the_logs_are_read_and_not_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reading and its scout keep the cores: a part's promtool started while the logs
    are read is niced (``BESIDE_NICE``); the last one's, after the reading, is not."""
    pids = tmp_path / "pids"
    tool = _promtool(tmp_path, f"echo $$ >> {pids}")
    part = tmp_path / "acceptmon-0001.om"
    part.write_text("# EOF\n")
    niced: list[tuple[int, int, int]] = []
    monkeypatch.setattr(os, "setpriority", lambda which, who, prio: niced.append((which, who, prio)))
    maker = Blocks(str(tool), tmp_path / "blocks")
    maker.add(part)
    wait_for(lambda: pids.exists() and len(pids.read_text().split()) == 1, 30, "the first promtool")
    maker.reading = False  # as ``Parts.finish`` says before the last part
    maker.add(part)
    assert maker.finish() is None
    first, last = map(int, pids.read_text().split())
    assert niced == [(os.PRIO_PROCESS, first, blocks.BESIDE_NICE)]
    assert last not in [who for _, who, _ in niced]
