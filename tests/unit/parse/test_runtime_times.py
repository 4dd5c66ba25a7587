"""The container runtime's time per line: used where a line has no time of its own, never over one."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from acceptmon.model import DecodeSample, SpecSample
from acceptmon.parse.line import LineParser
from acceptmon.testing import synth

T0 = datetime(2026, 11, 30, 12, 0, 1, tzinfo=UTC)
RUNTIME = "2026-11-30T13:30:00.5Z"
AT = datetime(2026, 11, 30, 13, 30, 0, 500000, tzinfo=UTC)


def test_a_line_without_a_time_takes_the_runtimes_and_one_with_keeps_its_own() -> None:
    p = LineParser("s", zone=timezone(timedelta(hours=2)))
    own = synth.decode_line(T0.replace(tzinfo=None), 2.5)
    bare = own.split("] ", 1)[1]
    p.at_chunk((RUNTIME, RUNTIME, None), 10)
    kept = p.parse(own, 10)
    taken = p.parse(bare, 11)
    none = p.parse(bare, 12)
    assert isinstance(kept, DecodeSample) and kept.meta.ts == T0.replace(tzinfo=None).replace(
        tzinfo=timezone(timedelta(hours=2))
    )
    assert isinstance(taken, DecodeSample) and taken.meta.ts == AT
    assert isinstance(none, DecodeSample) and none.meta.ts is None


def test_vllm_spec_line_without_its_prefix_takes_the_runtimes_time() -> None:
    p = LineParser("s")
    p.at_chunk((RUNTIME,), 1)
    line = (
        "SpecDecoding metrics: Mean acceptance length: 2.50, Accepted throughput: 10.00 tokens/s, "
        "Drafted throughput: 20.00 tokens/s, Accepted: 100 tokens, Drafted: 200 tokens, "
        "Per-position acceptance rate: 0.700, 0.500, 0.300, Avg Draft acceptance rate: 50.0%"
    )
    rec = p.parse(line, 1)
    assert isinstance(rec, SpecSample) and rec.meta.ts == AT


def test_lines_outside_the_chunks_times_take_none() -> None:
    p = LineParser("s")
    p.at_chunk((RUNTIME,), 5)
    bare = synth.decode_line(T0, 2.5).split("] ", 1)[1]
    rec = p.parse(bare, 9)
    assert isinstance(rec, DecodeSample) and rec.meta.ts is None
