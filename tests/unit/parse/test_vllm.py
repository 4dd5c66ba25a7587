"""vLLM spec-decode shapes: v0, early v1, and the three later v1 layouts."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

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
    assert first.meta.ts == datetime(2026, 12, 31, 23, 59, 59, tzinfo=UTC)
    assert second.meta.ts == datetime(2027, 1, 1, 23, 59, 59, tzinfo=UTC)


SPEC = "INFO {} [loggers.py:1] SpecDecoding metrics: Accepted: 5 tokens, Drafted: 10 tokens"


def _ts(p: LineParser, stamp: str, lineno: int = 1) -> datetime | None:
    rec = p.parse(SPEC.format(stamp), lineno)
    assert isinstance(rec, SpecSample)
    return rec.meta.ts


def test_year_never_puts_a_line_after_the_file_mtime() -> None:
    mtime = datetime(2027, 1, 3, 8, 0, tzinfo=UTC)
    # 12-30 of 2027 would be eleven months after the file was last written: 2026.
    assert _ts(LineParser("v", lambda: mtime), "12-30 12:00:01") == datetime(
        2026, 12, 30, 12, 0, 1, tzinfo=UTC
    )
    # A line a few hours after the mtime (slack) keeps the mtime's year.
    assert _ts(LineParser("v", lambda: mtime), "01-03 20:00:00") == datetime(2027, 1, 3, 20, tzinfo=UTC)


def test_hint_is_asked_per_line_so_a_live_log_crosses_the_new_year() -> None:
    now = [datetime(2026, 12, 31, 23, 59, tzinfo=UTC)]
    p = LineParser("v", lambda: now[0])
    assert _ts(p, "12-31 23:58:00") == datetime(2026, 12, 31, 23, 58, tzinfo=UTC)
    now[0] = datetime(2027, 1, 1, 0, 1, tzinfo=UTC)
    assert _ts(p, "01-01 00:00:30", 2) == datetime(2027, 1, 1, 0, 0, 30, tzinfo=UTC)


def test_fixed_year_is_the_first_lines_year_whatever_its_month() -> None:
    p = LineParser("v", None, UTC, 2025)
    assert _ts(p, "03-01 10:00:00") == datetime(2025, 3, 1, 10, tzinfo=UTC)
    p = LineParser("v", None, UTC, 2025)
    assert _ts(p, "12-31 23:00:00") == datetime(2025, 12, 31, 23, tzinfo=UTC)
    assert _ts(p, "01-01 01:00:00", 2) == datetime(2026, 1, 1, 1, tzinfo=UTC)


def test_wall_time_is_read_in_the_sources_zone() -> None:
    p = LineParser("v", lambda: datetime(2026, 7, 1, tzinfo=UTC), ZoneInfo("Asia/Kolkata"))
    ts = _ts(p, "06-01 17:30:00")
    assert ts is not None and ts.astimezone(UTC) == datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


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
