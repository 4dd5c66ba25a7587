"""``LocalFS``: the follower's ``FileSystem`` over ``os``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from acceptmon.sources.tail.fs import DevInode
from acceptmon.sources.tail.localfs import LocalFS


def test_a_handle_reads_its_file_after_a_rename_and_knows_its_inode(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_bytes(b"old\n")
    fs = LocalFS()
    h = fs.open(str(log))
    os.rename(log, tmp_path / "x.log.1")
    log.write_bytes(b"new file\n")
    st = os.stat(tmp_path / "x.log.1")
    assert h.read_at(0, 100) == b"old\n"
    assert h.identity() == h.stat().identity == DevInode(st.st_dev, st.st_ino)
    assert fs.stat(str(log)).identity != h.identity()
    h.close()


def test_listdir_stats_only_the_names_wanted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("x.log", "x.log.1", "other.log"):
        (tmp_path / name).write_text(name)
    (tmp_path / "x.log.2").mkdir()  # not a regular file
    stated: list[str] = []
    real = os.stat

    def counting(path: str, *a: Any, **kw: Any) -> os.stat_result:
        stated.append(os.path.basename(path))
        return real(path, *a, **kw)

    monkeypatch.setattr(os, "stat", counting)
    entries = LocalFS().listdir(str(tmp_path), lambda n: n.startswith("x.log."))
    assert [(e.name, e.size) for e in entries] == [("x.log.1", 7)]
    assert sorted(stated) == ["x.log.1", "x.log.2"]


def test_stat_tells_a_directory_from_a_file(tmp_path: Path) -> None:
    assert not LocalFS().stat(str(tmp_path)).regular
    (tmp_path / "f").write_text("")
    assert LocalFS().stat(str(tmp_path / "f")).regular
