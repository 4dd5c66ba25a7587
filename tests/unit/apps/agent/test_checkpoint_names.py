"""A checkpoint holding a file name that is not UTF-8 loads (issue 19 #1).

The code before this rule saved such a name raw (JSON ``\\udcff``) in every
source name; a hand-written file may hold the byte itself. Either loads: the
exact path still finds the file, the source names become what this version
makes them (``terminal.printable``), so counters and positions stay together.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from acceptmon.apps.agent.state import load, save

PATH = "/logs/server-\udcff.log"  # os.fsdecode(b"/logs/server-\xff.log")
OLD = "/logs/*.log:server-\udcff.log"  # the source name the code before made of it
NEW = "/logs/*.log:server-\\xff.log"


#: Positions: exact paths, kept as they are (a glob's, and an ssh:// file named on the command line).
POSITIONS = {
    "/logs/*.log": {"version": 1, "files": {PATH: {"offset": 3}}},
    "ssh://gpu-7" + PATH: {"url": "ssh://gpu-7" + PATH, "known": {PATH: [[1, "h"]]}, "files": {PATH: {}}},
}


def _doc(name: str, ssh: str) -> dict[str, object]:
    return {
        "version": 1,
        "sources": {"/logs/*.log": POSITIONS["/logs/*.log"], ssh: POSITIONS["ssh://gpu-7" + PATH]},
        "pipeline": {"store": {name: {"counters": {"lines": 3}}, ssh: {}}},
        "runs": {name: [{"source": name, "run_id": "r1"}]},
        "announced": {"keys": [f"log_stalled:{name}"], "raised": [["log_stalled", name, "warning", 1]]},
    }


def _check(loaded: dict[str, object] | None) -> None:
    assert loaded == _doc(NEW, "ssh://gpu-7/logs/server-\\xff.log")
    sources = loaded["sources"]
    assert isinstance(sources, dict)
    assert list(sources.values()) == list(POSITIONS.values())


def test_a_checkpoint_as_written_before_loads_with_printable_names(tmp_path: Path) -> None:
    (tmp_path / "checkpoint.json").write_text(
        json.dumps(_doc(OLD, "ssh://gpu-7" + PATH))
    )  # ensure_ascii: "\udcff"
    _check(load(str(tmp_path)))


@pytest.mark.parametrize("bom", [b"", b"\xef\xbb\xbf"])
def test_a_hand_written_checkpoint_with_the_raw_byte_loads(tmp_path: Path, bom: bytes) -> None:
    text = json.dumps(_doc(OLD, "ssh://gpu-7" + PATH), ensure_ascii=False).encode("utf-8", "surrogateescape")
    assert b"server-\xff.log" in text
    (tmp_path / "checkpoint.json").write_bytes(bom + text)
    _check(load(str(tmp_path)))


def test_the_exact_path_round_trips_through_save(tmp_path: Path) -> None:
    doc = _doc(NEW, "ssh://gpu-7/logs/server-\\xff.log")
    save(str(tmp_path), doc)
    assert load(str(tmp_path)) == doc
