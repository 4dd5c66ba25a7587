"""vLLM spec-decode shapes: v0, early v1, and the three later v1 layouts."""

from __future__ import annotations

from datetime import datetime

import pytest

from acceptmon.model import ParseError, SpecSample
from acceptmon.parse.line import LineParser

HINT = datetime(2026, 6, 30)


@pytest.mark.parametrize(
    ("line", "rate", "length", "acc", "drafted", "k", "cumulative"),
    [
        (
            "INFO 06-01 12:00:01 metrics.py:389] Speculative metrics: Draft acceptance rate: 0.651, System efficiency: 0.510, "
            "Number of speculative tokens: 3, Number of accepted tokens: 3014, Number of draft tokens: 4629, Number of emitted tokens: 4722.",
            3014 / 4629,
            1 + 3 * 3014 / 4629,
            3014,
            4629,
            3,
            True,
        ),
        (
            "INFO 06-01 12:00:01 [metrics.py:80] Speculative metrics: Draft acceptance rate: 0.421, Number of accepted tokens: 1234, "
            "Number of draft tokens tokens: 2931, ",
            1234 / 2931,
            None,
            1234,
            2931,
            None,
            False,
        ),
        (
            "(APIServer pid=1) INFO 06-01 10:00:00 [loggers.py:111] SpecDecoding metrics: Draft acceptance rate: 38.8%, Accepted: 388 tokens, Drafted: 1000 tokens",
            0.388,
            None,
            388,
            1000,
            None,
            False,
        ),
        (
            "INFO 06-01 10:00:00 [metrics.py:120] SpecDecoding metrics: Draft acceptance rate: 62.5%, Mean acceptance length: 2.88, "
            "Accepted: 1500 tokens, Drafted: 2400 tokens, Per-position acceptance rate: 0.812, 0.625, 0.438",
            0.625,
            2.88,
            1500,
            2400,
            3,
            False,
        ),
        (
            "    (EngineCore_DP0 pid=9) INFO 06-01 10:00:00 [loggers.py:123] SpecDecoding metrics: Mean acceptance length: 2.88, "
            "Accepted throughput: 150.00 tokens/s, Drafted throughput: 240.00 tokens/s, Accepted: 1500 tokens, Drafted: 2400 tokens, "
            "Per-position acceptance rate: 0.812, 0.625, 0.438, 0.300, 0.100, Avg Draft acceptance rate: 62.5%",
            0.625,
            2.88,
            1500,
            2400,
            5,
            False,
        ),
    ],
)
def test_spec_shapes(line, rate, length, acc, drafted, k, cumulative) -> None:
    rec = LineParser("v", HINT).parse(line, 1)
    assert isinstance(rec, SpecSample)
    assert rec.accept_rate == pytest.approx(rate)
    assert rec.accept_len == (pytest.approx(length) if length else None)
    assert (rec.accepted_tokens, rec.drafted_tokens, rec.num_spec_tokens, rec.cumulative) == (
        acc,
        drafted,
        k,
        cumulative,
    )
    assert rec.meta.ts is not None and rec.meta.ts.year == 2026


def test_nan_percent_and_zero_tokens() -> None:
    rec = LineParser("v", HINT).parse(
        "(APIServer pid=1) INFO 06-01 10:00:00 [loggers.py:1] SpecDecoding metrics: Draft acceptance rate: nan%, Accepted: 0 tokens, Drafted: 0 tokens",
        1,
    )
    assert isinstance(rec, SpecSample)
    assert rec.accept_rate is None
    assert (rec.accepted_tokens, rec.drafted_tokens) == (0, 0)


def test_year_wrap_and_hint_before_new_year() -> None:
    p = LineParser("v", datetime(2027, 1, 2))
    line = "INFO {} 23:59:59 [loggers.py:1] SpecDecoding metrics: Draft acceptance rate: 50.0%, Accepted: 5 tokens, Drafted: 10 tokens"
    first = p.parse(line.format("12-31"), 1)
    second = p.parse(line.format("01-01"), 2)
    assert isinstance(first, SpecSample) and isinstance(second, SpecSample)
    assert first.meta.ts == datetime(2026, 12, 31, 23, 59, 59)
    assert second.meta.ts == datetime(2027, 1, 1, 23, 59, 59)


def test_engine_line_labels_the_next_spec_line() -> None:
    p = LineParser("v", HINT)
    assert (
        p.parse("INFO 06-01 10:00:00 [loggers.py:1] Engine 003: Avg prompt throughput: 1.0 tokens/s", 1)
        is None
    )
    rec = p.parse(
        "INFO 06-01 10:00:00 [loggers.py:2] SpecDecoding metrics: Accepted: 5 tokens, Drafted: 10 tokens", 2
    )
    assert isinstance(rec, SpecSample) and rec.engine == 3


@pytest.mark.parametrize(
    "line",
    [
        "INFO 06-01 10:00:00 [loggers.py:2] SpecDecoding metrics: Accepted: 5 tokens",
        "INFO 06-01 10:00:00 [loggers.py:2] SpecDecoding metrics: garbage",
    ],
)
def test_incomplete_spec_lines_are_errors(line: str) -> None:
    assert isinstance(LineParser("v", HINT).parse(line, 1), ParseError)
