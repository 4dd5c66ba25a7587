"""The bulk path (agent and one-shot) and the per-line records path must agree exactly:
metrics, the detector's state and findings, and the jsonl output."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from acceptmon.detect import Detector
from acceptmon.ingest import Pipeline
from acceptmon.ingest.findings import FindingLog
from acceptmon.ingest.jsonl import JsonlWriter
from acceptmon.metrics.collect import render
from acceptmon.model import Record, Run
from acceptmon.runs.batch import DecodeBatch
from acceptmon.sources.chunks import read_chunks
from tests.conftest import ROOT, SAMPLES

ENGINES = ("llamacpp", "lmdeploy", "sglang-next", "vllm-json")
INPUTS = (
    sorted(SAMPLES.glob("*.log"))
    + sorted((ROOT / "tests" / "golden").glob("*/input.log"))
    + sorted(p for e in ENGINES for p in (ROOT / "tests" / "data" / e).glob("*.log"))
)


def _render(data: bytes, with_sink: bool) -> str:
    """``with_sink``: the per-line records path (the reference), else the bulk path."""
    pipeline = Pipeline(bulk=not with_sink)
    for chunk, overlong in read_chunks("s", io.BytesIO(data)):
        pipeline.feed(chunk)
        if overlong:
            pipeline.count_overlong("s", overlong)
    return render(pipeline.store)


class _Counting:
    """A consumer that notes how it was fed: by batch (bulk) or by record."""

    def __init__(self) -> None:
        self.batches = self.records = 0

    def observe_run_start(self, run: Run) -> None:
        pass

    def observe(self, record: Record) -> None:
        self.records += 1

    def observe_batch(self, batch: DecodeBatch) -> None:
        self.batches += 1


def _consumers(data: bytes, bulk: bool, chunk_lines: int = 0) -> tuple[str, str, str, str, int]:
    """What every consumer made of ``data``: metrics, jsonl, one-shot findings, and the
    agent's detector (fed as the agent feeds it, evaluated only at the end) as its checkpoint."""
    from acceptmon.model import Chunk

    pipeline = Pipeline(bulk=bulk)
    jsonl = io.StringIO()
    pipeline.consumers.append(JsonlWriter(jsonl, pipeline.tracker))
    findings = FindingLog(pipeline)
    agent = Detector()
    pipeline.consumers.append(agent)
    counting = _Counting()
    pipeline.consumers.append(counting)
    for chunk, overlong in read_chunks("s", io.BytesIO(data)):
        if chunk_lines:
            for at in range(0, len(chunk.lines), chunk_lines):
                part = chunk.lines[at : at + chunk_lines]
                pipeline.feed(Chunk("s", part, chunk.lineno + at))
        else:
            pipeline.feed(chunk)
        if overlong:
            pipeline.count_overlong("s", overlong)
    out = io.StringIO()
    findings.write(out)
    agent_findings = json.dumps([str(f) for f in agent.evaluate()])
    state = json.dumps(agent.checkpoint(), sort_keys=True, default=str) + agent_findings
    return render(pipeline.store), jsonl.getvalue(), out.getvalue(), state, counting.batches


@pytest.mark.parametrize("path", INPUTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fast_and_records_paths_agree(path: Path) -> None:
    data = path.read_bytes()
    assert _render(data, with_sink=False) == _render(data, with_sink=True)


@pytest.mark.parametrize("path", INPUTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_consumer_agrees_on_both_paths(path: Path) -> None:
    """The detector (agent and one-shot findings) and the jsonl writer, not only the store."""
    data = path.read_bytes()
    *bulk, _ = _consumers(data, bulk=True)
    *lines, batches = _consumers(data, bulk=False)
    assert batches == 0
    assert bulk == lines


def test_consumers_agree_on_generated_traffic_in_any_chunking(tmp_path: Path) -> None:
    """Long stretches go by batch (the point of the bulk path), and nothing changes with it."""
    from bench.gen_log import generate

    log = tmp_path / "g.log"
    generate(str(log), 20_000, seed=7)
    data = log.read_bytes().replace(b"accept len: 2.1", b"accept len: 2.x", 20)
    *reference, _ = _consumers(data, bulk=False)
    for chunk_lines in (0, 1, 7, 500):
        *bulk, batches = _consumers(data, bulk=True, chunk_lines=chunk_lines)
        assert bulk == reference
        assert batches > (0 if chunk_lines in (0, 500) else -1)
    assert reference[1].count('"kind": "decode"') > 9_000


def test_parity_on_generated_traffic_with_damage(tmp_path: Path) -> None:
    from bench.gen_log import generate

    log = tmp_path / "g.log"
    generate(str(log), 20_000, seed=3)
    data = log.read_bytes().replace(b"accept len: 2.1", b"accept len: 2.x", 50)
    fast, slow = _render(data, False), _render(data, True)
    assert fast == slow
    assert 'acceptmon_parse_errors_total{kind="malformed",source="s"} 0.0' not in fast


def test_parity_with_prompts_injected_through_request_logs(tmp_path: Path) -> None:
    """--log-requests dumps prompts into the log: both paths ignore markers inside them."""
    from bench.gen_log import generate
    from tests.unit.parse.test_hostile import CONTINUATION, INJECTIONS

    log = tmp_path / "g.log"
    generate(str(log), 5_000, seed=5)
    lines = log.read_text().splitlines()
    injected = "\n".join(INJECTIONS + CONTINUATION)
    data = "\n".join([*lines[:2000], injected, *lines[2000:3000], injected, *lines[3000:]]).encode() + b"\n"
    clean = "\n".join(lines).encode() + b"\n"
    fast, slow = _render(data, False), _render(data, True)
    assert fast == slow
    # The injected lines are lines, and nothing else.
    strip = [t for t in fast.splitlines() if not t.startswith("acceptmon_lines_total")]
    assert strip == [
        t for t in _render(clean, False).splitlines() if not t.startswith("acceptmon_lines_total")
    ]


@pytest.mark.parametrize("size", [1, 2, 3, 5, 8])
def test_parity_when_chunks_cut_through_request_dumps(size: int) -> None:
    """A request dump's continuation may start in the next chunk: both paths carry its state."""
    from acceptmon.model import Chunk
    from acceptmon.testing.synth import decode_line, server_args_line
    from tests.unit.parse.test_hostile import CONTINUATION, INJECTIONS, T0

    noise = "NCCL INFO Channel 00/04 : 0[0] -> 1[1] via P2P/IPC"
    good = [decode_line(T0, 2.0 + i / 10) for i in range(4)]
    lines = [server_args_line(T0), *good, *CONTINUATION, *good, INJECTIONS[0], noise, *good]
    lines += [*CONTINUATION[:-1], *good, INJECTIONS[3], "INFO:     Shutting down", *good, CONTINUATION[0]]
    lines += [CONTINUATION[1], *good]
    out = []
    for with_sink in (False, True):
        pipeline = Pipeline(bulk=not with_sink)
        for at in range(0, len(lines), size):
            pipeline.feed(Chunk("s", tuple(lines[at : at + size]), at + 1))
        out.append(render(pipeline.store))
        c = pipeline.store.stats("s").counters
        assert c["server_starts"] == 1 and c["server_shutdowns"] == 0 and c["decode_batches"] == 24
    assert out[0] == out[1]
