"""One-shot findings (evaluated after every interval) on the bulk path, against the records path.

``oneshot --format findings`` evaluates the detector after every interval. Its Decode
batches must stay on the bulk path while a drop is open, and leave exactly what the
per-record path leaves: the same findings (first-seen and resolved times to the interval)
and the same detector state, whatever the chunking.
"""

from __future__ import annotations

import io
import json
from datetime import timedelta

import pytest

from acceptmon.detect import DetectSettings, source
from acceptmon.detect.findings import DROP
from acceptmon.detect.series import Strata
from acceptmon.ingest import Pipeline
from acceptmon.ingest.findings import FindingLog
from acceptmon.model import Chunk
from acceptmon.testing.synth import server_args_line
from tests.unit.detect.test_batch import SCENARIOS, T0, _run_of, _steady


def _findings(lines: list[str], config: DetectSettings, bulk: bool, size: int) -> str:
    pipeline = Pipeline(bulk=bulk)
    log = FindingLog(pipeline, config)
    for at in range(0, len(lines), size):
        pipeline.feed(Chunk("s", tuple(lines[at : at + size]), at + 1))
    out = io.StringIO()
    log.write(out)
    return out.getvalue() + json.dumps(log.detector.checkpoint(), sort_keys=True, default=str)


def _more() -> dict[str, tuple[list[str], DetectSettings]]:
    base = _run_of(_steady(600, 2.6), T0, 1)
    at = [T0 + timedelta(hours=h) for h in range(1, 6)]
    # A drop that a later stretch of the same run recovers from, then again after a restart.
    back = _run_of(_steady(300, 2.0, 3) + _steady(400, 2.6, 4), at[0], 2)
    revert = _run_of(_steady(300, 2.0, 3), at[0], 2) + _run_of(_steady(400, 2.6, 1), at[1], 1)
    # A crash loop of bad runs: several drops open at once, each judged for recovery.
    loop = [line for k in range(3) for line in _run_of(_steady(120, 2.0 - k / 10, k), at[k], 10 + k)]
    # The draft's length changes (3 → 5 steps): a drop and its recovery in per-token acceptance.
    longer = server_args_line(at[0], random_seed=2, speculative_num_steps=5, speculative_num_draft_tokens=6)
    steps = [longer, *_run_of(_steady(300, 2.0, 3) + _steady(400, 3.05, 4), at[0], 2)[1:]]
    collapses = _run_of((_steady(30, 2.5) + [(1.0, 12)] * 6) * 12 + _steady(200, 2.6, 2), at[2], 5)
    quiet = [line for i, line in enumerate(base + back) if i % 3]  # idle gaps: some lines missing
    return {
        "drop recovers in its run": (base + back, DetectSettings()),
        "drop recovers after a revert": (base + revert, DetectSettings()),
        "several drops open": (base + loop, DetectSettings()),
        "per-token drop recovers": (base + steps, DetectSettings()),
        "resolved findings evicted": (base + back + collapses, DetectSettings(max_resolved=2)),
        "recent window of 7": (base + back, DetectSettings(recent=7, min_after=5)),
        "lines with gaps": (quiet, DetectSettings()),
    }


CASES = {**SCENARIOS, **_more()}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("size", [7, 64, 5000])
def test_findings_on_the_bulk_path_are_the_records_paths(name: str, size: int) -> None:
    lines, config = CASES[name]
    assert _findings(lines, config, bulk=True, size=size) == _findings(lines, config, bulk=False, size=size)


def test_the_cases_open_and_resolve_drops() -> None:
    """Guard against cases that test nothing: drops resolve, in both measures."""
    resolved = []
    for name in ("drop recovers in its run", "drop recovers after a revert", "per-token drop recovers"):
        lines, config = CASES[name]
        pipeline = Pipeline()
        log = FindingLog(pipeline, config)
        pipeline.feed(Chunk("s", tuple(lines), 1))
        log.write(io.StringIO())
        resolved += [f for f in log.findings.values() if f.rule == DROP and not f.active]
    assert len(resolved) >= 3
    assert any(f.measure == "per_token_acceptance" for f in resolved)


def test_an_open_drop_keeps_batches_on_the_bulk_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """While a drop is open, Decode lines are not taken one by one, nor compared one by one."""
    lines = _run_of(_steady(600, 2.6), T0, 1) + _run_of(_steady(3000, 2.0, 3), T0 + timedelta(hours=1), 2)
    one_by_one = compared = 0
    observe, compare = source.SourceState.observe_point, source.compare

    def counted_observe(state: source.SourceState, point: source.Point) -> None:
        nonlocal one_by_one
        one_by_one += 1
        observe(state, point)

    def counted_compare(
        before: Strata, after: Strata, min_stratum: int, scale: float = 100.0
    ) -> source.Comparison | None:
        nonlocal compared
        compared += 1
        return compare(before, after, min_stratum, scale)

    monkeypatch.setattr(source.SourceState, "observe_point", counted_observe)
    monkeypatch.setattr(source, "compare", counted_compare)
    pipeline = Pipeline()
    log = FindingLog(pipeline)
    pipeline.feed(Chunk("s", tuple(lines), 1))
    assert [f.rule for f in log.findings.values() if f.active] == [DROP]
    assert one_by_one < 200  # the warm-ups and the first test's stretches only: not 3600
    assert compared < 100  # the change tests' only: recovery checks are not full comparisons


def test_two_sources_read_together_are_each_as_on_the_records_path() -> None:
    """A batch evaluates its own source only: the others' evaluations would change nothing."""
    (one, config), (two, _) = CASES["drop recovers in its run"], CASES["drift inside a run"]

    def feed(bulk: bool) -> str:
        pipeline = Pipeline(bulk=bulk)
        log = FindingLog(pipeline, config)
        for at in range(0, max(len(one), len(two)), 50):
            pipeline.feed(Chunk("s", tuple(one[at : at + 50]), at + 1))
            pipeline.feed(Chunk("t", tuple(two[at : at + 50]), at + 1))
        out = io.StringIO()
        log.write(out)
        return out.getvalue() + json.dumps(log.detector.checkpoint(), sort_keys=True, default=str)

    assert feed(bulk=True) == feed(bulk=False)
