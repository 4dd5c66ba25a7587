"""The state directory is the agent's own: another user's is refused, planted symlinks are not followed.

The agent may run as root, so a state directory another user owns (or can plant
links in) must not be adopted by a chmod, and no state file or subdirectory is
read, written or chmod-ed through a symlink. Also: a full disk logs its checkpoint
error once per episode (then a reminder), not at every poll.
"""

from __future__ import annotations

import logging
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from acceptmon.apps.agent import state as checkpoint
from acceptmon.apps.agent.agent import Agent
from acceptmon.apps.agent.api import metrics_text as _metrics
from acceptmon.clock import ManualClock
from acceptmon.notify.store import MessageStore
from acceptmon.settings import Settings
from acceptmon.settings.sources import SourceSettings
from acceptmon.text import redact
from tests.unit.apps.agent.test_checkpoint_shapes import lines_total, run_agent, write_log

NOBODY = 65534
#: How often a lasting checkpoint failure is logged again (``agent.REMIND_S``).
REMIND_S = 600.0


def metric(text: str, name: str) -> float:
    (line,) = [x for x in text.splitlines() if x.startswith(name + " ")]
    return float(line.rsplit(" ", 1)[1])


def test_a_state_dir_owned_by_another_user_is_refused_with_exit_code_4(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    write_log(log)
    state = tmp_path / "state"
    state.mkdir(mode=0o755)
    state.chmod(0o755)
    os.chown(state, NOBODY, NOBODY)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "acceptmon",
            "run",
            "--state-dir",
            str(state),
            "--listen",
            "127.0.0.1:0",
            str(log),
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 4, proc.stderr
    assert f"owned by uid {NOBODY}, not by the agent's user (uid {os.geteuid()})" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert stat.S_IMODE(state.stat().st_mode) == 0o755, "another user's directory is not adopted by a chmod"
    assert list(state.iterdir()) == []


def test_a_state_dir_chowned_away_while_running_stops_checkpoints_not_the_agent(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    write_log(log)
    state = tmp_path / "state"
    agent = Agent(Settings(state_dir=str(state), sources=(SourceSettings(path=str(log), name="app"),)))
    agent.open()
    os.chown(state, NOBODY, NOBODY)
    assert not agent.save_checkpoint()
    assert agent.checkpoint.errors == 1
    os.chown(state, os.geteuid(), os.getegid())
    agent.close()


@pytest.fixture
def planted(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A log, an empty state directory, and a directory outside it for symlink targets."""
    log = tmp_path / "server.log"
    write_log(log)
    state, outside = tmp_path / "state", tmp_path / "outside"
    state.mkdir(mode=0o700)
    outside.mkdir(mode=0o755)
    outside.chmod(0o755)
    return log, state, outside


def snapshot(directory: Path) -> dict[str, tuple[int, bytes]]:
    return {
        str(p.relative_to(directory)): (
            stat.S_IMODE(p.lstat().st_mode),
            p.read_bytes() if p.is_file() else b"",
        )
        for p in [directory, *directory.rglob("*")]
    }


def test_a_symlinked_checkpoint_is_not_read_but_moved_aside(
    planted: tuple[Path, Path, Path], caplog: pytest.LogCaptureFixture
) -> None:
    log, state, outside = planted
    n = lines_total(run_agent(state, log)[1])
    (outside / "checkpoint.json").write_bytes((state / "checkpoint.json").read_bytes())  # a valid one
    (state / "checkpoint.json").unlink()
    (state / "checkpoint.json").symlink_to(outside / "checkpoint.json")
    before = snapshot(outside)
    _agent, text = run_agent(state, log)
    assert snapshot(outside) == before, "the target is untouched"
    assert metric(text, "acceptmon_checkpoint_discarded_total") == 1.0  # not restored through the link
    assert lines_total(text) == n  # read again from the start: nothing counted twice
    assert metric(text, "acceptmon_state_symlinks_refused_total") >= 1.0
    assert not (state / "checkpoint.json").is_symlink()
    assert "symlink in the state directory; not following it" in caplog.text


def test_a_symlinked_fingerprint_key_is_not_used(planted: tuple[Path, Path, Path]) -> None:
    log, state, outside = planted
    (outside / "key").write_bytes(b"k" * 32)
    (state / "redact.key").symlink_to(outside / "key")
    _agent, text = run_agent(state, log)
    assert redact._KEY[0] != b"k" * 32
    assert (outside / "key").read_bytes() == b"k" * 32
    assert metric(text, "acceptmon_state_symlinks_refused_total") >= 1.0


def test_a_symlinked_runs_directory_is_neither_chmod_ed_nor_written(planted: tuple[Path, Path, Path]) -> None:
    log, state, outside = planted
    (state / "runs").symlink_to(outside)
    before = snapshot(outside)
    _agent, text = run_agent(state, log)
    assert snapshot(outside) == before
    assert metric(text, "acceptmon_state_symlinks_refused_total") >= 1.0


def test_a_symlinked_notify_directory_is_refused(planted: tuple[Path, Path, Path]) -> None:
    _log, state, outside = planted
    (state / "notify").symlink_to(outside)
    before = snapshot(outside)
    with pytest.raises(OSError, match="symlink"):
        MessageStore(state / "notify" / "slack")
    assert snapshot(outside) == before


def test_the_notify_directory_is_private(tmp_path: Path) -> None:
    """Issue 19 item 16: ``notify/`` was created 0755 (only the channel's directory was 0700)."""
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    MessageStore(state / "notify" / "slack")
    assert stat.S_IMODE((state / "notify").stat().st_mode) == 0o700
    assert stat.S_IMODE((state / "notify" / "slack").stat().st_mode) == 0o700


def test_a_full_disk_logs_the_checkpoint_error_once_per_episode_plus_reminders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 19 item 16: every 0.5 s poll logged it again."""
    log = tmp_path / "server.log"
    write_log(log)
    clock = ManualClock(1_764_500_000.0)
    agent = Agent(
        Settings(state_dir=str(tmp_path / "state"), sources=(SourceSettings(path=str(log), name="app"),)),
        clock,
    )
    agent.open()
    real = checkpoint.save

    def full(_state_dir: str, _data: object) -> None:
        raise checkpoint.CheckpointWriteError(28, "cannot save checkpoint: No space left on device")

    monkeypatch.setattr(checkpoint, "save", full)
    attempts = int(REMIND_S / 0.5) * 2 + 10  # twenty minutes of polls
    caplog.clear()
    for _ in range(attempts):
        assert not agent.save_checkpoint()
        clock.advance(0.5)
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR and "checkpoint" in r.getMessage()]
    assert len(errors) == 3, [r.getMessage() for r in errors]  # the first, then one per ten minutes
    assert "still cannot write checkpoint" in errors[1].getMessage()
    assert metric(_metrics(agent), "acceptmon_checkpoint_errors_total") == attempts
    monkeypatch.setattr(checkpoint, "save", real)
    caplog.clear()
    caplog.set_level(logging.INFO)
    assert agent.save_checkpoint()
    assert "checkpoint written again" in caplog.text
    agent.close()
