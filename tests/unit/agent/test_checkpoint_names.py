"""A checkpoint holding a file name that is not UTF-8 loads (issue 19 #1).

The code before this rule saved such a name raw (JSON ``\\udcff``) in every
source name; a hand-written file may hold the byte itself. Either loads: the
exact path still finds the file, the source names become what this version
makes them (``labels.printable``), so counters and positions stay together.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from acceptmon.agent.checkpoint import load, save

PATH = "/logs/server-\udcff.log"  # os.fsdecode(b"/logs/server-\xff.log")
OLD = "/logs/*.log:server-\udcff.log"  # the source name the code before made of it
NEW = "/logs/*.log:server-\\xff.log"


def _doc(name: str) -> dict[str, object]:
    return {
        "version": 1,
        "sources": {"/logs/*.log": {"version": 1, "files": {PATH: {"done": [], "current": None}}}},
        "pipeline": {"store": {name: {"counters": {"lines": 3}}}},
        "runs": {name: [{"source": name, "run_id": "r1"}]},
        "announced": {"keys": [f"log_stalled:{name}"], "raised": [["log_stalled", name, "warning", 1]]},
    }


def _check(loaded: dict[str, object] | None) -> None:
    assert loaded is not None
    assert loaded["sources"] == {
        "/logs/*.log": {"version": 1, "files": {PATH: {"done": [], "current": None}}}
    }
    assert loaded["pipeline"] == {"store": {NEW: {"counters": {"lines": 3}}}}
    assert loaded["runs"] == {NEW: [{"source": NEW, "run_id": "r1"}]}
    assert loaded["announced"] == {
        "keys": [f"log_stalled:{NEW}"],
        "raised": [["log_stalled", NEW, "warning", 1]],
    }


def test_a_checkpoint_as_written_before_loads_with_printable_names(tmp_path: Path) -> None:
    (tmp_path / "checkpoint.json").write_text(json.dumps(_doc(OLD)))  # ensure_ascii: "\udcff"
    _check(load(str(tmp_path)))


@pytest.mark.parametrize("bom", [b"", b"\xef\xbb\xbf"])
def test_a_hand_written_checkpoint_with_the_raw_byte_loads(tmp_path: Path, bom: bytes) -> None:
    text = json.dumps(_doc(OLD), ensure_ascii=False).encode("utf-8", "surrogateescape")
    assert b"server-\xff.log" in text
    (tmp_path / "checkpoint.json").write_bytes(bom + text)
    _check(load(str(tmp_path)))


def test_the_exact_path_round_trips_through_save(tmp_path: Path) -> None:
    save(str(tmp_path), _doc(NEW))
    assert load(str(tmp_path)) == _doc(NEW)
