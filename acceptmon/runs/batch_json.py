"""A bulk batch's jsonl lines written straight from its columns: no record or dict per line.

``oneshot --format jsonl`` on a big log spends most of its time building a record
object and a dict per line and encoding each. A batch's columns hold few distinct
values, so each distinct value is encoded once (by the same encoder, so the text is
the same) and every line is one ``%`` format of its column texts into a template
that spells the record's keys in ``record_json``'s order. A test compares every line
with ``record_line`` of the batch's records.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import fields
from datetime import datetime
from itertools import compress, repeat
from operator import and_, contains, not_
from typing import Any

from acceptmon.model import KIND, DecodeSample, PrefillSample
from acceptmon.parse.sglang import DECODE, PREFILL
from acceptmon.runs.batch import DecodeBatch, Stamp

_ENCODE = json.JSONEncoder(allow_nan=False).encode


def _text(value: Any) -> str:
    """A scalar as the encoder writes it (``int.__repr__``, ``float.__repr__`` for finite
    floats, which the layouts' patterns guarantee; ``true``, ``false``, ``null``)."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    return repr(value)


def _texts(col: list[Any]) -> tuple[list[str], int]:
    """Each value's JSON text, written once per distinct value, and how many distinct texts
    (a constant column is given as its one text: the template takes it in). A column holds
    one type (and None), so no two of its distinct values compare equal across types."""
    distinct = set(col)
    if bool in set(map(type, distinct)):
        table = {v: _text(v) for v in distinct}
    else:  # numbers (and None): repr at C speed
        table = dict(zip(distinct, map(repr, distinct), strict=True))
        if None in table:
            table[None] = "null"
    if len(table) == 1:
        return list(table.values()), 1
    return list(map(table.__getitem__, col)), len(table)


def _iso(ts: datetime | None) -> str:
    return f'"{ts.isoformat()}"' if ts is not None else "null"


def _stamp_texts(stamps: list[Stamp]) -> tuple[list[str], int]:
    """``ts`` and ``ranks`` of each line, as ``record_json`` writes them, once per distinct
    stamp (an ISO time holds nothing JSON escapes)."""
    ranks = {r: _ENCODE(dict(r)) for r in {s[1] for s in stamps}}
    table = {s: f'{_iso(s[0])}, "ranks": {ranks[s[1]]}' for s in set(stamps)}
    return list(map(table.__getitem__, stamps)), len(table)


def _lines(
    record: type[DecodeSample | PrefillSample],
    source: str,
    run_id: str | None,
    cols: tuple[list[Any], ...],
    linenos: list[int],
) -> list[str]:
    """Each line's text: a ``%`` template spelling the keys in ``record_json``'s order, with
    the batch's constant columns written into it (a batch has several) and ``%s`` for the rest."""
    *values, extra = cols
    names = [f.name for f in fields(record) if f.name not in ("meta", "extra")]
    head = f'{{"kind": {_ENCODE(KIND[record])}, "source": {_ENCODE(source)}, "run_id": {_ENCODE(run_id)}'
    parts: list[tuple[str, tuple[list[str], int]]] = [
        (', "lineno": ', (list(map(str, linenos)), len(linenos))),
        (', "ts": ', _stamp_texts(values[0])),
    ]
    parts += [(f", {_ENCODE(name)}: ", _texts(col)) for name, col in zip(names, values[1:], strict=True)]
    parts += [(f"{', ' if i else ''}{_ENCODE(key)}: ", _texts(col)) for i, (key, col) in enumerate(extra)]
    template = head.replace("%", "%%")
    args: list[list[str]] = []
    for i, (key, (texts, distinct)) in enumerate(parts):
        if i == len(parts) - len(extra):
            template += ', "extra": {'
        template += key.replace("%", "%%")
        if distinct == 1:
            template += texts[0].replace("%", "%%")
        else:
            template += "%s"
            args.append(texts)
    if not extra:
        template += ', "extra": {'
    template += "}}\n"
    if not args:
        return [template % ()] * len(linenos)
    return list(map(template.__mod__, zip(*args, strict=True)))


def batch_jsonl(batch: DecodeBatch, run_id: str | None) -> str | None:
    """The batch's records as jsonl (each line as ``record_line`` writes it), or None where
    some record needs the per-record path (a line the layouts do not capture whole)."""
    decode, prefill = batch.decode_columns(), batch.prefill_columns()
    if decode is None or prefill is None:
        return None
    lines, lineno = batch.lines, batch.lineno
    numbers = range(lineno, lineno + len(lines))
    is_decode = list(map(contains, lines, repeat(DECODE)))
    is_prefill = list(map(and_, map(contains, lines, repeat(PREFILL)), map(not_, is_decode)))
    out = [""] * len(lines)
    for mask, record, cols in ((is_decode, DecodeSample, decode), (is_prefill, PrefillSample, prefill)):
        at = list(compress(range(len(lines)), mask))
        if not at:
            continue
        texts = _lines(record, batch.source, run_id, cols, list(compress(numbers, mask)))
        deque(map(out.__setitem__, at, texts), maxlen=0)  # placed at C speed
    return "".join(out)
