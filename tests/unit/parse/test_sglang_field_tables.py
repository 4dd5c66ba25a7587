"""Every known Decode/Prefill field reaches its sample: the parsers build samples field by
field (typed), so a table entry without a home there would otherwise be dropped silently."""

from __future__ import annotations

import pytest

from acceptmon.model import Meta
from acceptmon.parse import sglang
from acceptmon.parse.fields import Kind

_TEXT: dict[Kind, tuple[str, object]] = {"int": ("7", 7), "f2": ("0.25", 0.25), "bool": ("True", True)}


def _body(table: dict[str, tuple[str, Kind]]) -> tuple[str, dict[str, object]]:
    """One key per field name, each with a valid value; and what the sample must then hold."""
    parts, expected = [], {}
    for key, (name, kind) in table.items():
        if name not in expected:
            text, value = _TEXT[kind]
            parts.append(f"{key}: {text}")
            expected[name] = value
    return ", " + ", ".join(parts), expected


@pytest.mark.parametrize(
    ("table", "parse"),
    [(sglang.DECODE_FIELDS, sglang.parse_decode), (sglang.PREFILL_FIELDS, sglang.parse_prefill)],
    ids=["decode", "prefill"],
)
def test_every_table_field_is_set_on_the_sample(table, parse) -> None:
    body, expected = _body(table)
    sample = parse(body, Meta("s", 1, None))
    assert {name: getattr(sample, name) for name in expected} == expected
    for name, value in expected.items():
        assert type(getattr(sample, name)) is type(value), name
