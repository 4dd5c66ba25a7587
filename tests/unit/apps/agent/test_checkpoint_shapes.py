"""A checkpoint of the wrong shape is moved aside and the agent starts as on a first run.

Each case is valid JSON written over a real checkpoint: the agent must start,
serve /metrics, keep the bad file for inspection, count it, and count every
line exactly once (positions and counters are dropped together).
"""

from __future__ import annotations

import copy
import json
import os
import random
import stat
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from acceptmon.apps.agent.agent import Agent
from acceptmon.apps.agent.api import metrics_text as _metrics
from acceptmon.clock import ManualClock
from acceptmon.model import Run, SpecConfig
from acceptmon.runs.codec import SnapshotStore
from acceptmon.settings import Settings
from acceptmon.settings.sources import SourceSettings
from acceptmon.testing import synth

T0 = datetime(2026, 11, 28, 9, 0, 0)
Doc = dict[str, Any]


def write_log(path: Path) -> int:
    rng = random.Random(5)
    lines = synth.startup(T0, seed=1) + list(synth.traffic(rng, T0 + timedelta(seconds=50), 160, 2.4))
    path.write_text("".join(line + "\n" for line in lines))
    return len(lines)


def run_agent(state: Path, log: Path, clock: ManualClock | None = None) -> tuple[Agent, str]:
    """One agent over ``log`` read to its end and closed; its /metrics text at the end."""
    agent = Agent(Settings(state_dir=str(state), sources=(SourceSettings(path=str(log), name="app"),)), clock)
    agent.open()
    while agent.step():
        pass
    text = _metrics(agent)
    agent.close()
    return agent, text


def lines_total(metrics: str) -> float:
    for line in metrics.splitlines():
        if line.startswith('acceptmon_lines_total{engine="sglang",source="app"}'):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError("no acceptmon_lines_total for app")


@pytest.fixture(scope="module")
def first_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, Doc]:
    root = tmp_path_factory.mktemp("first")
    log = root / "server.log"
    n = write_log(log)
    _agent, text = run_agent(root / "state", log)
    assert lines_total(text) == n
    return log, n, json.loads((root / "state" / "checkpoint.json").read_text())


def stream(d: Doc) -> Doc:
    (entry,) = d["sources"]["app"]["files"].values()
    return entry["streams"][0]


def stats(d: Doc) -> Doc:
    return d["pipeline"]["store"]["app"]


def current(d: Doc) -> Doc:
    return d["runs"]["app"]["current"]


def setter(get: Callable[[Doc], Any], key: Any, value: Any) -> Callable[[Doc], Any]:
    def mutate(d: Doc) -> Doc:
        get(d)[key] = value
        return d

    return mutate


def deleter(get: Callable[[Doc], Any], key: Any) -> Callable[[Doc], Any]:
    def mutate(d: Doc) -> Doc:
        del get(d)[key]
        return d

    return mutate


def top(d: Doc) -> Doc:
    return d


CASES: dict[str, Callable[[Doc], Any]] = {
    "top level a list": lambda d: [d],
    "top level a number": lambda d: 42,
    "version a string": setter(top, "version", "1"),
    "version missing": deleter(top, "version"),
    "sources missing": deleter(top, "sources"),
    "sources a list": setter(top, "sources", []),
    "source a string": setter(lambda d: d["sources"], "app", "x"),
    "files a list": setter(lambda d: d["sources"]["app"], "files", []),
    "streams an object": setter(lambda d: next(iter(d["sources"]["app"]["files"].values())), "streams", {}),
    "negative offset": setter(stream, "offset", -5),
    "offset a string": setter(stream, "offset", "100"),
    "offset a float": setter(stream, "offset", 1e30),
    "offset huge": setter(stream, "offset", 10**40),
    "offset true": setter(stream, "offset", True),
    "lineno zero": setter(stream, "lineno", 0),
    "identity missing": deleter(stream, "identity"),
    "identity a number": setter(stream, "identity", 123),
    "fp_len null": setter(stream, "fp_len", None),
    "pipeline missing": deleter(top, "pipeline"),
    "lines counter a string": setter(lambda d: stats(d)["counters"], "lines", "245"),
    "lines counter NaN": setter(lambda d: stats(d)["counters"], "lines", float("nan")),
    "lines counter negative": setter(lambda d: stats(d)["counters"], "lines", -1),
    "lines counter infinite": setter(lambda d: stats(d)["counters"], "lines", float("inf")),
    "gauge a string": setter(lambda d: stats(d)["gauges"], "accept_len", "2.5"),
    "buckets short": setter(stats, "buckets", [1, 2]),
    "bucket a string": setter(lambda d: stats(d)["buckets"], 0, "x"),
    "counters a list": setter(stats, "counters", [1]),
    "runs of a source a list": setter(lambda d: d["runs"], "app", []),
    "run setting a string": setter(lambda d: current(d)["settings"], "num_steps", "3"),
    "run start not a time": setter(current, "started", "yesterday"),
    "run id a number": setter(current, "run_id", 7),
    "run seq a bool": setter(lambda d: d["runs"]["app"], "seq", True),
    "server_args a list": setter(lambda d: current(d)["config"], "server_args", [1, 2]),
    "detector a string": setter(top, "detector", "x"),
    "detector sources a list": setter(lambda d: d["detector"], "sources", [1]),
    "detector findings a string": setter(lambda d: d["detector"]["sources"]["app"], "book", "x"),
    "detector run data a number": setter(lambda d: d["detector"]["sources"]["app"], "current", 5),
    "announced raised short rows": setter(lambda d: d["announced"], "raised", [[1, 2]]),
    "announced keys a string": setter(lambda d: d["announced"], "keys", "abc"),
}


def test_there_are_at_least_25_shapes() -> None:
    assert len(CASES) >= 25


@pytest.mark.parametrize("case", sorted(CASES))
def test_wrong_shape_checkpoint_is_moved_aside_and_counts_stay_exact(
    case: str, first_run: tuple[Path, int, Doc], tmp_path: Path
) -> None:
    log, n, valid = first_run
    state = tmp_path / "state"
    state.mkdir()
    bad = json.dumps(CASES[case](copy.deepcopy(valid)))
    (state / "checkpoint.json").write_text(bad)
    _agent, text = run_agent(state, log)
    assert "acceptmon_checkpoint_discarded_total 1.0" in text
    assert lines_total(text) == n, "positions and counters must be taken or dropped together"
    aside = list(state.glob("checkpoint.json.bad-*")) + list(state.glob("checkpoint.json.corrupt-*"))
    assert [p.read_text() for p in aside] == [bad]
    assert json.loads((state / "checkpoint.json").read_text())["version"] == 1


def test_a_valid_checkpoint_is_kept(first_run: tuple[Path, int, Doc], tmp_path: Path) -> None:
    log, n, valid = first_run
    state = tmp_path / "state"
    state.mkdir()
    (state / "checkpoint.json").write_text(json.dumps(valid))
    _, text = run_agent(state, log)
    assert "acceptmon_checkpoint_discarded_total 0.0" in text
    assert lines_total(text) == n
    assert not list(state.glob("checkpoint.json.*"))


def test_state_files_are_private(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    write_log(log)
    state = tmp_path / "state"
    state.mkdir(mode=0o755)
    state.chmod(0o755)
    run_agent(state, log)
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    files = [p for p in state.rglob("*") if p.is_file()]
    assert any(p.name == "checkpoint.json" for p in files) and any(
        p.parent.parent.name == "runs" for p in files
    )
    assert {p.name: stat.S_IMODE(p.stat().st_mode) for p in files} == {p.name: 0o600 for p in files}
    dirs = [p for p in state.rglob("*") if p.is_dir()]
    assert {str(p): stat.S_IMODE(p.stat().st_mode) & 0o077 for p in dirs} == {str(p): 0 for p in dirs}


def run(source: str, run_id: str) -> Run:
    return Run(source, run_id, T0, 1, None, SpecConfig())


def test_run_snapshots_are_pruned_by_count_and_age(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path, keep_runs=5, max_age_days=90)
    for i in range(1, 9):
        store.save(run("app", f"r{i}"))
    assert [r["run_id"] for r in store.load("app")] == ["r4", "r5", "r6", "r7", "r8"]
    store.save(run("old", "r1"))
    store.save(run("old", "r2"))
    (snapshot,) = [p for p in (tmp_path / "runs").rglob("r1.json")]
    stamp = time.time() - 91 * 86400
    os.utime(snapshot, (stamp, stamp))
    store.prune()
    assert [r["run_id"] for r in store.load("old")] == ["r2"]
    assert len(store.load("app")) == 5
