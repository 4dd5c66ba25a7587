"""The detector's batch path (``detect/bulk.py``) against its per-record path, rule by rule.

Each scenario is a log crafted to make one rule move inside long stretches of
Decode lines (which the pipeline hands on as batches); both paths must leave
the very same state, findings and texts, whatever the chunking.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta

import pytest

from acceptmon.detect import Detector, DetectSettings
from acceptmon.detect.findings import COLLAPSED, DRIFT, DROP, FLOOR, STALLED
from acceptmon.detect.settings import Floor
from acceptmon.ingest import Pipeline
from acceptmon.model import Chunk, Record
from acceptmon.runs.batch import DecodeBatch
from acceptmon.testing.synth import decode_line, server_args_line, shutdown

T0 = datetime(2026, 3, 1, 12, 0, 0)


class _Kinds:
    def __init__(self) -> None:
        self.batches = 0

    def observe(self, record: Record) -> None:
        pass

    def observe_batch(self, batch: DecodeBatch) -> None:
        self.batches += 1


def _later(detector: Detector) -> datetime | None:
    """Ten minutes after the newest line: long enough for a stall, which the next chunk ends."""
    last = detector.last_time("s")
    return last + timedelta(minutes=10) if last is not None else None


def _run(lines: list[str], config: DetectSettings, bulk: bool, size: int) -> tuple[str, int]:
    pipeline = Pipeline(bulk=bulk)
    detector = Detector(config)
    kinds = _Kinds()
    pipeline.consumers += [detector, kinds]
    for at in range(0, len(lines), size):
        pipeline.feed(Chunk("s", tuple(lines[at : at + size]), at + 1))
        detector.evaluate(_later(detector))  # as the agent does between steps, here with a stall
    findings = [
        (f.key, f.active, f.summary, str(f.resolved_at), f.now_accept_len) for f in detector.evaluate()
    ]
    state = json.dumps(detector.checkpoint(), sort_keys=True, default=str)
    return state + json.dumps(findings, default=str), kinds.batches


def _run_of(values: list[tuple[float, int]], start: datetime, seed: int, queue: int = 0) -> list[str]:
    """A start line and one Decode line per (accept len, running), a second apart."""
    lines = [server_args_line(start, random_seed=seed)]
    for i, (length, running) in enumerate(values):
        lines.append(decode_line(start + timedelta(seconds=i + 1), length, running, queue if i < 40 else 0))
    return lines


def _steady(n: int, level: float, seed: int = 0) -> list[tuple[float, int]]:
    return [(round(level + ((i * 7 + seed) % 11 - 5) / 100, 2), 8 + (i * 5) % 40) for i in range(n)]


def _scenarios() -> dict[str, tuple[list[str], DetectSettings]]:
    base = _run_of(_steady(600, 2.6), T0, 1)
    later = T0 + timedelta(hours=1)
    drop = _run_of(_steady(400, 2.0, 3), later, 2)
    drift = _run_of(_steady(200, 2.6) + _steady(400, 1.9, 5) + _steady(300, 2.6, 2), later, 3)
    collapse = _run_of(
        _steady(200, 2.5) + [(1.0, 12)] * 9 + _steady(50, 2.5) + [(1.01, 30), (2.0, 30)] * 40, later, 4
    )
    gone = T0 + timedelta(hours=3)
    stalled = [
        *base,
        decode_line(gone, 2.6, 30, 5),
        *(decode_line(gone + timedelta(seconds=i), 2.6, 20) for i in range(300)),
    ]
    return {
        "drop after a restart": (base + drop, DetectSettings()),
        "drift inside a run": (drift, DetectSettings()),
        "collapse fires and resolves": (collapse, DetectSettings()),
        "floor by accept len (line by line)": (base + drop, DetectSettings(floor=Floor(accept_len=2.3))),
        "floor by rate, quiet": (base, DetectSettings(floor=Floor(accept_rate=0.2))),
        "stall ended by a batch": (stalled, DetectSettings(stall_s=60.0)),
        "warm-up across batches": (_run_of(_steady(120, 2.4), T0, 9, queue=3), DetectSettings()),
        "shutdown between runs": (base + shutdown(T0 + timedelta(seconds=700)) + drop, DetectSettings()),
        "windows smaller than a batch": (base + drop, DetectSettings(recent=20, window=50, head=40)),
    }


SCENARIOS = _scenarios()


@pytest.mark.parametrize("name", sorted(SCENARIOS))
@pytest.mark.parametrize("size", [7, 64, 5000])
def test_batch_path_leaves_the_state_the_records_path_does(name: str, size: int) -> None:
    lines, config = SCENARIOS[name]
    reference, none = _run(lines, config, bulk=False, size=size)
    bulk, batches = _run(lines, config, bulk=True, size=size)
    assert none == 0
    assert batches > 0 or size >= len(lines) // 2  # one chunk: its first stretch teaches the layout
    assert bulk == reference


def test_the_scenarios_make_the_rules_move() -> None:
    """Guard against scenarios that test nothing: each rule fires somewhere."""
    fired: set[str] = set()
    for lines, config in SCENARIOS.values():
        pipeline = Pipeline()
        detector = Detector(config)
        pipeline.consumers.append(detector)
        for at in range(0, len(lines), 64):
            pipeline.feed(Chunk("s", tuple(lines[at : at + 64]), at + 1))
            fired |= {f.rule for f in detector.evaluate(_later(detector))}
    assert {DROP, DRIFT, COLLAPSED, FLOOR, STALLED} <= fired
