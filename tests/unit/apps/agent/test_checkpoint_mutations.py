"""Any JSON value anywhere in a real checkpoint: the agent starts and every endpoint answers 200.

The checkpoint is one an agent wrote after reading the bundled demo log (findings,
baselines, run stats, snapshots). Each case replaces one leaf or container with a
value of another JSON type or an absurd value (NaN, infinity, 10**30, an object), or
deletes it. The agent must start, /metrics and /api/* must answer 200, and nothing
may log a traceback: every field is checked where it is decoded (``acceptmon.statefiles.strict``).
"""

from __future__ import annotations

import copy
import http.client
import json
import logging
import shutil
import threading
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acceptmon.apps.agent.agent import Agent
from acceptmon.apps.agent.daemon import serve
from acceptmon.settings import load

Doc = Any
Path_ = tuple[str | int, ...]
DELETE = object()
ABSURD: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    1.5,
    10**30,
    -(10**30),
    float("nan"),
    float("inf"),
    "",
    "x",
    "2026-01-01",
    [],
    [1, "a"],
    {},
    {"a": 1},
    {"0": {"1": "x"}},
]


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Doc]:
    """The demo log and the state an agent left after reading it to the end."""
    root = tmp_path_factory.mktemp("demo")
    log = root / "server.log"
    log.write_bytes(
        resources.files("acceptmon.apps.demo.data").joinpath("demo-eagle3-incident.log").read_bytes()
    )
    agent = Agent(load(None, [str(log)], {"state_dir": str(root / "state")}))
    agent.open()
    while agent.step():
        pass
    agent.evaluate()
    assert agent.announce.findings, "the demo log must leave findings in the checkpoint"
    agent.close()
    doc = json.loads((root / "state" / "checkpoint.json").read_text())
    return log, root / "state", doc


def paths(x: Any, p: Path_ = ()) -> Iterator[Path_]:
    """Every leaf and container of ``x``, itself included."""
    yield p
    items = x.items() if isinstance(x, dict) else enumerate(x) if isinstance(x, list) else ()
    for k, v in items:
        yield from paths(v, (*p, k))


def shapes(doc: Doc) -> list[Path_]:
    """One path per shape (the first two of each: list indices and histogram keys vary)."""
    seen: dict[tuple[str, ...], int] = {}
    out = []
    for p in paths(doc):
        sig = tuple("#" if isinstance(k, int) or k.lstrip("-").isdigit() else k for k in p)
        seen[sig] = seen.get(sig, 0) + 1
        if seen[sig] <= 2:
            out.append(p)
    return out


def mutate(doc: Doc, path: Path_, value: Any) -> Doc:
    if not path:
        return value
    doc = copy.deepcopy(doc)
    parent = doc
    for k in path[:-1]:
        parent = parent[k]
    if value is DELETE:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return doc


def get(port: int, path: str) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", path)
    resp = conn.getresponse()
    return resp.status, resp.read()


def start_and_serve(log: Path, template: Path, state: Path, doc: Doc) -> dict[str, int]:
    """Start an agent on ``doc`` (with the template's snapshots and key); every endpoint's status."""
    shutil.copytree(template, state)
    (state / "checkpoint.json").write_text(json.dumps(doc))
    agent = Agent(load(None, [str(log)], {"state_dir": str(state), "listen": "127.0.0.1:0"}))
    server = serve(agent)
    agent.open()
    stop = threading.Event()
    loop = threading.Thread(target=agent.run, args=(stop,), daemon=True)
    loop.start()
    try:
        status = {p: get(server.port, p)[0] for p in ("/metrics", "/api/findings", "/api/verdict")}
        code, body = get(server.port, "/api/runs")
        status["/api/runs"] = code
        for row in json.loads(body) if code == 200 else []:
            # A mutated run id may hold any character: the path is percent-encoded, as a browser would.
            status[f"/api/runs/{row['run_id']}"] = get(
                server.port, f"/api/runs/{quote(row['run_id'], safe='')}"
            )[0]
    finally:
        stop.set()
        agent.waker.wake()
        loop.join(10)
        agent.close()
        server.stop()
    return status


def check(demo: tuple[Path, Path, Doc], tmp: Path, path: Path_, value: Any, caplog: Any) -> None:
    log, template, doc = demo
    caplog.clear()
    status = start_and_serve(log, template, tmp, mutate(doc, path, value))
    where = ".".join(map(str, path)) or "(top)"
    assert set(status.values()) == {200}, (where, value, status)
    tracebacks = [r.getMessage() for r in caplog.records if r.exc_info]
    assert not tracebacks, (where, value, tracebacks)


@st.composite
def cases(draw: st.DrawFn, doc: Doc) -> tuple[Path_, Any]:
    path = draw(st.sampled_from(shapes(doc)))
    json_scalars = st.one_of(
        st.sampled_from(ABSURD),
        st.integers(min_value=-(10**40), max_value=10**40),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(max_size=12),
    )
    value = draw(
        st.one_of(
            json_scalars,
            st.lists(json_scalars, max_size=3),
            st.dictionaries(st.text(max_size=4), json_scalars, max_size=3),
            st.just(DELETE) if path else st.nothing(),
        )
    )
    return path, value


def test_every_shape_of_the_demo_checkpoint_is_covered(demo: tuple[Path, Path, Doc]) -> None:
    """The checkpoint under test holds every stage's state (else the test proves little)."""
    _log, _template, doc = demo
    assert set(doc) == {
        "version",
        "sources",
        "pipeline",
        "runs",
        "detector",
        "announced",
        "run_stats",
        "cost",
        "generated",
    }
    names = {k for p in shapes(doc) for k in p if isinstance(k, str)}
    assert {"book", "baselines", "strata", "drift", "swing", "streams", "counters", "last_ts"} <= names


def test_each_field_of_a_wrong_type_is_survived(
    demo: tuple[Path, Path, Doc], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Every shape of the checkpoint, replaced by a value of another type (cycling through them)."""
    _log, _template, doc = demo
    caplog.set_level(logging.WARNING)
    cycle = [{"a": 1}, 7, "x", float("nan"), [], None, 10**30, True, float("inf"), -1, DELETE]
    for i, path in enumerate(shapes(doc)):
        value = cycle[i % len(cycle)]
        check(demo, tmp_path / str(i), path, value if path or value is not DELETE else None, caplog)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_any_json_value_anywhere_is_survived(
    demo: tuple[Path, Path, Doc], tmp_path_factory: pytest.TempPathFactory, data: st.DataObject, caplog: Any
) -> None:
    _log, _template, doc = demo
    path, value = data.draw(cases(doc))
    check(demo, tmp_path_factory.mktemp("case") / "state", path, value, caplog)


def test_a_finding_whose_source_is_an_object_does_not_stop_the_agent(
    demo: tuple[Path, Path, Doc], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 19 item 7: this exited 1 at every start (a systemd restart loop)."""
    _log, _template, doc = demo
    source = next(iter(doc["detector"]["sources"]))
    check(demo, tmp_path / "state", ("detector", "sources", source, "book", 0, "source"), {"a": 1}, caplog)
    (warning,) = [r.getMessage() for r in caplog.records if "unusable" in r.getMessage()]
    assert "checkpoint unusable (detector: Finding.source: not of its type)" in warning


@pytest.mark.parametrize("value", ["2.5", float("nan"), float("inf"), 10**400])
def test_a_finding_s_bad_number_does_not_break_api_findings(
    demo: tuple[Path, Path, Doc], tmp_path: Path, value: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 19 item 7: these made /api/findings answer 500 for good."""
    _log, _template, doc = demo
    source = next(iter(doc["detector"]["sources"]))
    check(
        demo,
        tmp_path / "state",
        ("detector", "sources", source, "book", 0, "before_accept_len"),
        value,
        caplog,
    )


@pytest.mark.parametrize(
    "bad", [[], {"run_id": 5}, {"source": {}, "run_id": "r1"}, {"run_id": "r1", "source": "x", "started": 7}]
)
def test_a_run_snapshot_of_the_wrong_shape_is_skipped(
    demo: tuple[Path, Path, Doc], tmp_path: Path, bad: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Snapshots under ``runs/`` are read by the same rule: a bad one is skipped, never a 500."""
    log, template, doc = demo
    copy_of = tmp_path / "template"
    shutil.copytree(template, copy_of)
    for snap in (copy_of / "runs").rglob("r*.json"):
        snap.write_text(json.dumps(bad))
    status = start_and_serve(log, copy_of, tmp_path / "state", doc)
    assert 500 not in status.values() and status["/api/runs"] == 200, status
    assert not [r for r in caplog.records if r.exc_info]


def test_a_counter_beyond_2_to_the_62_reads_back(demo: tuple[Path, Path, Doc], tmp_path: Path) -> None:
    """Hostile lines can claim that many tokens; the checkpoint that counts them must not be refused."""
    log, template, doc = demo
    doc = copy.deepcopy(doc)
    (stats,) = doc["pipeline"]["store"].values()
    stats["counters"]["accepted_tokens"] = 2.0**70
    shutil.copytree(template, tmp_path / "state")
    (tmp_path / "state" / "checkpoint.json").write_text(json.dumps(doc))
    agent = Agent(load(None, [str(log)], {"state_dir": str(tmp_path / "state")}))
    agent.open()
    agent.close()
    assert agent.checkpoint.discarded == 0
