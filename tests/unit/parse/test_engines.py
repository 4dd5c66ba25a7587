"""LMDeploy, vLLM JSON logging and SGLang's newer Decode shapes, one format-exact sample per variant."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from acceptmon.model import DecodeSample, ParseError, PositionRates, Record, SpecSample
from acceptmon.parse.line import LineParser

DATA = Path(__file__).resolve().parents[2] / "data"


def _records(name: str) -> list[Record | None]:
    parser = LineParser("s")
    return [parser.parse(line, i) for i, line in enumerate((DATA / name).read_text().splitlines(), 1)]


def test_lmdeploy_stats_line_is_an_exact_spec_record_with_rank_and_time() -> None:
    dp0, dp1, idle = _records("lmdeploy/stats.log")
    assert isinstance(dp0, SpecSample) and isinstance(dp1, SpecSample) and idle is None
    assert dp0.engine_name == "lmdeploy" and dp0.engine == 0 and dp0.meta.ranks == (("dp", 0),)
    assert dp0.meta.ts == datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
    assert (dp0.accepted_tokens, dp0.drafted_tokens, dp0.accept_len) == (1502, 2703, 2.67)
    assert dp0.accept_rate == 1502 / 2703 and dp0.per_position == (0.791, 0.560, 0.359)
    assert dp1.engine == 1 and (dp1.accepted_tokens, dp1.drafted_tokens) == (1200, 2400)


def test_vllm_json_logging_takes_the_time_from_the_json() -> None:
    first, second, request, access, after = _records("vllm-json/json.log")
    assert isinstance(first, SpecSample) and isinstance(second, SpecSample) and isinstance(after, SpecSample)
    assert first.engine_name == "vllm" and (first.accepted_tokens, first.drafted_tokens) == (1502, 2703)
    assert first.meta.ts == datetime(2026, 11, 30, 10, 0, 0, 125000, tzinfo=UTC)  # asctime, source zone
    assert second.meta.ts == datetime(2026, 11, 30, 10, 0, 10, 500000, tzinfo=UTC)  # ISO 8601 with Z
    assert request is None and access is None  # a prompt quoting a marker is a request, not a record
    assert (after.accepted_tokens, after.meta.ts) == (1000, datetime(2026, 11, 30, 10, 0, 20, tzinfo=UTC))


def test_sglang_dspark_bracket_hisparse_pool_and_per_position_line() -> None:
    dspark, window, hisparse, partial = _records("sglang-next/variants.log")
    assert isinstance(dspark, DecodeSample) and dspark.accept_len == 4.02 and dspark.token_usage == 0.10
    assert dict(dspark.extra)["est uncap acc len"] == "4.02 [3.80, 4.24]"  # one field, bracket whole
    assert "" not in dict(dspark.extra)
    assert isinstance(hisparse, DecodeSample) and hisparse.token_usage == 0.25  # the GPU pool
    assert dict(hisparse.extra)["cpu token usage"] == 0.05 and "#token" not in dict(hisparse.extra)
    assert isinstance(window, PositionRates)
    assert window.window == (0.80, 0.61, 0.42) and window.window_accept_len == 2.83
    assert window.lifetime == (0.79, 0.60, 0.41) and window.lifetime_accept_len == 2.80
    assert isinstance(partial, PositionRates) and partial.window == (0.78, 0.55, None)  # nan: unobserved


def test_a_damaged_per_position_line_is_a_counted_error() -> None:
    parser = LineParser("s")
    line = "[2026-11-30 10:00:00 TP0] Decode batch, #window: spec accept rate (per-position): [0.80, 7.5]"
    assert isinstance(parser.parse(line + ", accept len: 2.83", 1), ParseError)
    assert isinstance(parser.parse("[2026-11-30 10:00:00 TP0] Decode batch, #window: nothing", 2), ParseError)
