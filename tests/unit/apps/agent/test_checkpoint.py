from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from acceptmon.apps.agent import state as checkpoint
from acceptmon.apps.agent.state import CheckpointWriteError, load, save


def test_round_trip_and_replace(tmp_path: Path) -> None:
    state = tmp_path / "state"
    assert load(str(state)) is None
    save(str(state), {"sources": {"a": {"offset": 1}}, "counters": {"lines": 5}})
    save(str(state), {"sources": {"a": {"offset": 2}}, "counters": {"lines": 9}})
    assert load(str(state)) == {"sources": {"a": {"offset": 2}}, "counters": {"lines": 9}}
    assert os.listdir(state) == ["checkpoint.json"]


@pytest.mark.parametrize("content", [b"{not json", b"[1, 2]", b"\xff\xfe"])
def test_corrupt_checkpoint_is_moved_aside_and_ignored(tmp_path: Path, content: bytes) -> None:
    (tmp_path / "checkpoint.json").write_bytes(content)
    assert load(str(tmp_path), now=1234) is None
    assert (tmp_path / "checkpoint.json.corrupt-1234").read_bytes() == content
    assert not (tmp_path / "checkpoint.json").exists()


def test_write_error_raises_and_keeps_old_checkpoint_without_temp_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    save(str(tmp_path), {"v": 1})

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(checkpoint.os, "fsync", full)
    with pytest.raises(CheckpointWriteError) as info:
        save(str(tmp_path), {"v": 2})
    assert info.value.errno == errno.ENOSPC and isinstance(info.value, OSError)
    monkeypatch.undo()
    assert os.listdir(tmp_path) == ["checkpoint.json"]
    assert load(str(tmp_path)) == {"v": 1}


def test_unserialisable_data_is_a_programming_error_not_a_write_error(tmp_path: Path) -> None:
    with pytest.raises(TypeError):
        save(str(tmp_path), {"v": object()})
    assert os.listdir(tmp_path) == []
