"""jsonl writes a Decode batch from its layout's regex groups as text: each value's JSON text
is the one ``json`` gives the parsed record, whatever digits the log prints."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from acceptmon.ingest.jsonl import _column, _f2s
from tests.unit.parse.test_fast_path_parity import _consumers

ARGS = (
    "[2026-11-30 00:00:00] server_args={'model_path': 'm', 'tp_size': 1, 'speculative_algorithm': 'EAGLE3', "
    "'speculative_num_steps': 3, 'speculative_eagle_topk': 1, 'speculative_num_draft_tokens': 4}\n"
)
#: Float texts whose JSON is not the text: trailing zeros, a leading zero, under 1e-4, over 15 digits.
ODD = (
    "2796.50",
    "10.00",
    "0.0",
    "0.00",
    "05.25",
    "0.00001",
    "0.0000",
    "1234567890.1234567",
    "99999999999999999.5",
)
#: Enough distinct values first that a column is converted value by value, not through a table.
MANY = [f"{i}.{i % 97:02d}" for i in range(1000, 1400)]


def _each(column: list[str]) -> list[str]:
    texts = _f2s(column)
    return [texts] * len(column) if isinstance(texts, str) else list(texts)  # one text: every line's


@given(st.lists(st.from_regex(r"\A[0-9]{1,18}\.[0-9]{1,18}\Z"), max_size=50))
def test_a_float_column_is_what_repr_makes_of_each_value(texts: list[str]) -> None:
    for column in (texts, MANY + texts, texts + MANY):
        assert _each(column) == [repr(float(t)) for t in column]


def test_odd_float_texts_are_converted_where_they_stand() -> None:
    rng = random.Random(3)
    for odd in ODD:
        column = list(MANY)
        column.insert(rng.randrange(len(column)), odd)
        assert _each(column) == [repr(float(t)) for t in column], odd


def test_a_negative_zero_keeps_its_sign() -> None:
    assert _column([0.0, -0.0, 1.5, None]) == ["0.0", "-0.0", "1.5", "null"]
    assert _column([0, 0, 0]) == "0"  # one text for every line


def _log(throughputs: list[str]) -> bytes:
    lines = [ARGS]
    for i, g in enumerate(throughputs):
        ts = f"[2026-11-30 00:{i // 60 % 60:02d}:{i % 60:02d} TP0] "
        lines.append(
            ts + f"Decode batch, #running-req: {i % 7 + 1}, #token: {1000 + i}, token usage: 0.{i % 90:02d}, "
            f"accept len: 2.{i % 100:02d}, accept rate: 0.{i % 80:02d}, cuda graph: {i % 3 == 0}, "
            f"gen throughput (token/s): {g}, #queue-req: {i % 2}\n"
        )
        if i % 4 == 0:
            lines.append(
                ts + f"Prefill batch, #new-seq: 1, #new-token: {i}, #cached-token: 0, token usage: 0.04, "
                f"#running-req: {i % 7}, #queue-req: 0, input throughput (token/s): {g}\n"
            )
    return "".join(lines).encode()


def test_batches_of_odd_numbers_write_what_the_per_line_path_writes() -> None:
    throughputs = list(MANY)
    for at, odd in enumerate(ODD):
        throughputs[at * 37 + 5] = odd
    data = _log(throughputs)
    *bulk, batches = _consumers(data, bulk=True)
    *lines, _ = _consumers(data, bulk=False)
    assert batches > 0
    assert bulk[1] == lines[1]  # the jsonl
    assert bulk[1].count('"kind": "decode"') == len(throughputs)
