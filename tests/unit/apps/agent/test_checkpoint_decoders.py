"""Each stage's decoder checks its part of the checkpoint as it reads it (no schema module).

A wrong value raises ``WrongShape`` naming the field, never the value; the agent then moves
the whole document aside (``test_checkpoint_shapes.py``). Every part carries the one version.
"""

from __future__ import annotations

import copy
import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from acceptmon.apps.agent.agent import Agent
from acceptmon.apps.agent.announce import Announcer
from acceptmon.metrics.store import ACCEPT_LEN_BUCKETS, SourceStats
from acceptmon.model import Run, SpecConfig
from acceptmon.runs.codec import check_source_runs, run_to_dict
from acceptmon.settings import Settings
from acceptmon.settings.sources import SourceSettings
from acceptmon.sources.tail.entry import Entry, check_document
from acceptmon.statefiles import CHECKPOINT_VERSION
from acceptmon.statefiles.strict import WrongShape
from acceptmon.testing import synth

ENTRY = {
    "identity": "2049:1234",
    "offset": 10,
    "lineno": 3,
    "fingerprint": "ab" * 16,
    "fp_len": 10,
    "real": "/var/log/x.log",
}


@pytest.mark.parametrize(
    ("change", "where"),
    [
        ({"offset": -1}, "e.offset"),
        ({"lineno": True}, "e.lineno"),
        ({"identity": "x:1"}, "e.identity"),
        ({"marks": [[0, "ab"]]}, "e.marks[0][0]"),
    ],
)
def test_an_entry_names_its_wrong_field(change: dict[str, Any], where: str) -> None:
    with pytest.raises(WrongShape) as caught:
        Entry.decode(ENTRY | change, "e")
    assert caught.value.where == where
    assert Entry.from_json(ENTRY | change) is None  # the sources' own reading stays lenient


def test_file_source_documents_local_and_ssh() -> None:
    check_document({"version": CHECKPOINT_VERSION, "files": {"/x": {"streams": [ENTRY], "done": {}}}}, "s")
    check_document({"url": "ssh://h/x", "files": {"/x": ENTRY}}, "s")  # written before it had a version
    bad = [
        {"version": CHECKPOINT_VERSION + 1, "files": {}},
        {"files": {}},
        {"version": CHECKPOINT_VERSION, "files": {"/x": {"streams": {}}}},
        {"version": CHECKPOINT_VERSION, "files": {"/x": {"streams": [], "done": {"a": ["fp"]}}}},
        {"url": 5, "files": {}},
    ]
    for doc in bad:
        with pytest.raises(WrongShape):
            check_document(doc, "s")


def _stats() -> dict[str, Any]:
    return SourceStats().to_dict()


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d["counters"].update(lines=-1),
        lambda d: d["counters"].update(nonsense=1.0),
        lambda d: d.update(buckets=[0] * (len(ACCEPT_LEN_BUCKETS) - 1)),
        lambda d: d["gauges"].update(accept_len="2.5"),
        lambda d: d.update(v0_last={"0": [1]}),
        lambda d: d.update(seen=-1),
        lambda d: d.pop("counters"),
    ],
)
def test_counters_are_taken_whole_or_not_at_all(mutate: Any) -> None:
    doc = _stats()
    doc["counters"]["lines"] = 7.0
    assert SourceStats.from_dict(copy.deepcopy(doc)).counters["lines"] == 7.0
    mutate(doc)
    with pytest.raises(WrongShape):
        SourceStats.from_dict(doc)


def _runs() -> dict[str, Any]:
    run = Run("app", "r1", datetime(2026, 1, 1), 1, None, SpecConfig(num_steps=3))
    return {"seq": 1, "ended": False, "crashed": False, "current": run_to_dict(run), "previous": None}


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d.update(seq=True),
        lambda d: d.update(ended="no"),
        lambda d: d["current"].update(started="yesterday"),
        lambda d: d["current"]["settings"].update(num_steps="3"),
        lambda d: d["current"]["settings"].update(unknown=1),
        lambda d: d["current"]["settings"].update(decode_log_interval=0),
    ],
)
def test_a_source_s_runs_are_checked_as_they_are_decoded(mutate: Any) -> None:
    doc = _runs()
    check_source_runs(copy.deepcopy(doc), "runs.app")
    mutate(doc)
    with pytest.raises(WrongShape):
        check_source_runs(doc, "runs.app")


def test_what_was_announced_is_taken_whole(tmp_path: Path) -> None:
    announcer = Announcer(tmp_path, 0.0)
    paged = announcer.restore({"keys": [], "raised": [["rule", "app", "warning", 2]], "paged": []}, [])
    assert paged == frozenset() and announcer.raised[("rule", "app", "warning")] == 2
    with pytest.raises(WrongShape):
        announcer.restore({"raised": [["rule", "app", "warning", 3], [1, 2]]}, [])
    assert announcer.raised[("rule", "app", "warning")] == 2  # nothing taken from the bad one


def _first_checkpoint(tmp_path: Path) -> tuple[Settings, dict[str, Any]]:
    log = tmp_path / "server.log"
    log.write_text("".join(line + "\n" for line in synth.startup(datetime(2026, 1, 1), seed=1)))
    settings = Settings(
        state_dir=str(tmp_path / "state"), sources=(SourceSettings(path=str(log), name="app"),)
    )
    agent = Agent(settings)
    agent.open()
    while agent.step():
        pass
    agent.close()
    return settings, json.loads((tmp_path / "state" / "checkpoint.json").read_text())


def test_every_part_carries_the_one_version(tmp_path: Path) -> None:
    _settings, doc = _first_checkpoint(tmp_path)
    assert (
        doc["version"] == doc["sources"]["app"]["version"] == doc["detector"]["version"] == CHECKPOINT_VERSION
    )


def test_detector_state_of_another_version_keeps_positions_and_counters(tmp_path: Path) -> None:
    """Not a wrong value: the detector starts afresh, nothing else is dropped."""
    settings, doc = _first_checkpoint(tmp_path)
    doc["detector"]["version"] = CHECKPOINT_VERSION + 1
    (tmp_path / "state" / "checkpoint.json").write_text(json.dumps(doc))
    agent = Agent(settings)
    agent.open()
    assert agent.checkpoint.discarded == 0
    assert agent.pipeline.store.sources["app"].counters["lines"] > 0
    assert agent.checkpoint.positions["app"] == doc["sources"]["app"]
    agent.close()
