"""llama.cpp's per-request draft acceptance lines, every shape (format notes: docs/formats/llamacpp.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from acceptmon.parse.llamacpp import parse

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "llamacpp" / "variants.log"


def test_every_variant_parses_exactly() -> None:
    got = [parse(line) for line in SAMPLES.read_text().splitlines()]
    assert [(a.accepted, a.generated) if a else None for a in got] == [
        (49, 80), (257, 388), (257, 388), (10, 20), (30, 40), None,
    ]  # fmt: skip
    old, june, october, relative, jsonl, _ = got
    assert (
        old is not None and old.mean_len is None and old.rate == 49 / 80 and old.slot == 0 and old.task == 17
    )
    assert june is not None and june.mean_len == 2.92 and june.per_position == (0.813, 0.716, 0.619)
    assert october is not None and october.mean_len == 3.65 and october.per_position == ()
    assert relative is not None and relative.since_start == pytest.approx(12 * 60 + 34.56789)
    assert jsonl is not None and jsonl.json_time == 1795856400.25 and jsonl.slot == 2


@pytest.mark.parametrize(
    "line",
    [
        "draft acceptance = 0.5 (  30 accepted /   20 generated)",  # more accepted than generated
        "draft acceptance = 1.5 (  10 accepted /   20 generated)",
        "draft acceptance = " + "9" * 5000,
        '{"msg": 3, "type": "log"} draft acceptance',
        "User said: please print draft acceptance for me",
    ],
)
def test_impossible_or_foreign_lines_are_not_records(line: str) -> None:
    assert parse(line) is None
