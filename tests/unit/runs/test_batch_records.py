"""jsonl records of a bulk batch are built from the learned layouts' columns: the same
records as the per-line parser gives, without running it on every Decode and Prefill line."""

from __future__ import annotations

import io

import pytest

from acceptmon.ingest import Pipeline
from acceptmon.ingest.jsonl import JsonlWriter
from acceptmon.model import Record, Run
from acceptmon.parse import sglang
from acceptmon.runs.batch import DecodeBatch
from acceptmon.sources.chunks import read_chunks
from tests.unit.parse.test_fast_path_parity import _consumers

ARGS = (
    "[2026-11-30 00:00:00] server_args={'model_path': 'm', 'tp_size': 1, 'speculative_algorithm': 'EAGLE3', "
    "'speculative_num_steps': 3, 'speculative_eagle_topk': 1, 'speculative_num_draft_tokens': 4}\n"
)

#: Decode layouts: the bench's, an iteration header, hybrid and HiSparse pools (token usage from
#: an extra), checked extras, no accept len, and the cluster repeat tail.
DECODE = (
    "Decode batch, #running-req: {r}, #token: {t}, token usage: 0.07, accept len: 2.{a:02d}, "
    "accept rate: 0.58, cuda graph: True, gen throughput (token/s): {g}.52, #queue-req: 0",
    "Decode batch [{t}], #running-req: {r}, #token: {t}, token usage: 0.{a:02d}, accept len: 1.{a:02d}, "
    "cpu graph: False, gen throughput (token/s): {g}.00, #queue-req: {r}",
    "Decode batch. #running-req: {r}, full token usage: 0.{a:02d}, swa token usage: 0.10, "
    "accept len: 3.{a:02d}, gen throughput (token/s): {g}.10, #queue-req: 1",
    "Decode batch. #running-req: {r}, gpu token usage: 0.{a:02d}, cpu token usage: 0.20, mamba num: 3, "
    "accept len: 2.50, gen throughput (token/s): {g}.10, largest-len: {t}, #queue-req: 2",
    "Decode batch. #running-req: {r}, #token: {t}, token usage: 0.{a:02d}, gen throughput (token/s): {g}.25, "
    "#queue-req: 0",
    # Unknown fields typed by ``loose``; one turns to free text half-way (the parser reads those lines).
    "Decode batch. #running-req: {r}, spec steps: {r}, draft ms: {g}.5, warm: True, "
    "gen throughput (token/s): {g}.25, #queue-req: 0, note: {note}",
)
PREFILL = (
    "Prefill batch, #new-seq: 1, #new-token: {t}, #cached-token: 0, token usage: 0.04, #running-req: {r}, "
    "#queue-req: 0, #pending-token: 0, cuda graph: False, input throughput (token/s): {g}.00",
    "Prefill batch, #new-seq: 1, #new-token: {t}, #cached-token: {r}, token usage: 0.04, #running-req: {r}, "
    "#queue-req: 0",
    "Prefill batch [{t}], #new-seq: {r}, #new-token: {t}, #cached-token: 0, full token usage: 0.{a:02d}",
)


def _log(decode: str, prefill: str, n: int = 120, repeat_tail: bool = False) -> bytes:
    lines = [ARGS]
    for i in range(n):
        ts = f"[2026-11-30 00:{i // 60:02d}:{i % 60:02d} TP{i % 2}] "
        values = {
            "r": i % 7 + 1,
            "t": 1000 + i,
            "a": i % 90,
            "g": 500 + i,
            "note": i if i < n // 2 else "n/a",
        }
        tail = f" [repeated {i % 3 + 2}x across cluster]" if repeat_tail and i % 5 == 0 else ""
        lines.append(ts + decode.format(**values) + tail + "\n")
        if i % 4 == 0:
            lines.append(ts + prefill.format(**values) + "\n")
        if i % 9 == 0:
            lines.append('[2026-11-30 00:00:01] INFO:     127.0.0.1:4 - "POST /v1 HTTP/1.1" 200 OK\n')
    return "".join(lines).encode()


@pytest.mark.parametrize("decode", DECODE)
@pytest.mark.parametrize("prefill", PREFILL)
@pytest.mark.parametrize("repeat_tail", [False, True])
def test_records_from_columns_equal_the_parsers(decode: str, prefill: str, repeat_tail: bool) -> None:
    data = _log(decode, prefill, repeat_tail=repeat_tail)
    *bulk, batches = _consumers(data, bulk=True, chunk_lines=37)
    *lines, _ = _consumers(data, bulk=False)
    assert batches > 0
    assert bulk == lines


def test_jsonl_does_not_reparse_every_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the lines that teach a layout (and those before a run opens) meet the parser."""
    calls = {"decode": 0, "prefill": 0}
    decode, prefill = sglang.parse_decode, sglang.parse_prefill

    def counting_decode(body: str, meta: sglang.Meta) -> object:
        calls["decode"] += 1
        return decode(body, meta)

    def counting_prefill(body: str, meta: sglang.Meta) -> object:
        calls["prefill"] += 1
        return prefill(body, meta)

    monkeypatch.setattr(sglang, "parse_decode", counting_decode)
    monkeypatch.setattr(sglang, "parse_prefill", counting_prefill)
    pipeline = Pipeline(bulk=True)
    out = io.StringIO()
    pipeline.consumers.append(JsonlWriter(out, pipeline.tracker))
    for chunk, _ in read_chunks("s", io.BytesIO(_log(DECODE[0], PREFILL[0], n=400))):
        pipeline.feed(chunk)
    assert out.getvalue().count('"kind"') == 1 + 400 + 100  # server_args, Decode, Prefill
    assert calls["decode"] < 20 and calls["prefill"] < 20, calls


def test_batch_jsonl_splits_exactly_with_hostile_source_names() -> None:
    """The batch is encoded in one call and split at ``}, {"kind": ``: a source name holding
    that text (escaped inside its string) must not split a line."""
    from acceptmon.ingest.jsonl import record_line

    name = 'x}, {"kind": "decode"\n'
    pipeline = Pipeline(bulk=True)
    out = io.StringIO()
    records: list[Record] = []

    class Keep:
        def observe_run_start(self, run: Run) -> None:
            pass

        def observe(self, record: Record) -> None:
            records.append(record)

        def observe_batch(self, batch: DecodeBatch) -> None:
            records.extend(batch.records())

    pipeline.consumers.append(JsonlWriter(out, pipeline.tracker))
    pipeline.consumers.append(Keep())
    for chunk, _ in read_chunks(name, io.BytesIO(_log(DECODE[0], PREFILL[0]))):
        pipeline.feed(chunk)
    run = pipeline.tracker.current(name)
    expected = "".join(record_line(r, run.run_id if run else None) + "\n" for r in records)
    assert out.getvalue() == expected
    assert out.getvalue().count("\n") == len(records)
