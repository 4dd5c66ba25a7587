"""`oneshot --format jsonl`: one JSON object per record, written from a batch's columns.

A record's object is its kind, source, run, line number, time and ranks, then its fields
in declaration order, byte for byte what ``json`` makes of the record (``record_line``,
which every record outside a batch goes through). A batch's lines are one ``%`` of a
template each: what all of them share (keys, a value every line has) is in the
template, what varies is a column of JSON texts, each distinct value encoded once. A
Decode line's texts come straight from its layout's regex groups (text to JSON text,
never through a number or a record); a Prefill line's from the batch's rows.
"""

from __future__ import annotations

import json
import math
import re
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import fields
from datetime import datetime
from functools import partial
from itertools import compress, filterfalse, repeat
from operator import attrgetter, eq, itemgetter, sub
from typing import IO, Any

from acceptmon.model import KIND, DecodeSample, Extras, PrefillSample, Record, Run, SpecSample
from acceptmon.parse.layouts import record_layout
from acceptmon.parse.sglang import DECODE, DECODE_FIELDS, MAX_ACCEPT_LEN
from acceptmon.runs import RunTracker
from acceptmon.runs.batch import USAGE_POOLS, DecodeBatch, Stamp


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


#: One encoder for every line (``json.dumps`` with an option builds one per call).
_ENCODE = json.JSONEncoder(allow_nan=False).encode
#: Kinds whose fields are scalars and whose ``ranks`` and ``extra`` have text keys: for them
#: ``_clean`` changes nothing but non-finite floats, which the encoder refuses (then it runs).
_FLAT = (DecodeSample, PrefillSample)
#: Each record type's fields but ``meta``, and what reads them all at C speed.
_FIELDS: dict[type, tuple[tuple[str, ...], Callable[[Record], tuple[Any, ...]]]] = {}


def _names(kind: type) -> tuple[str, ...]:
    return tuple(f.name for f in fields(kind) if f.name != "meta")


def _fields(record: Record) -> tuple[tuple[str, ...], tuple[Any, ...]]:
    """The record's field names but ``meta``, and their values."""
    got = _FIELDS.get(type(record))
    if got is None:
        names = _names(type(record))
        read = attrgetter(*names) if len(names) > 1 else lambda r: tuple(getattr(r, n) for n in names)
        got = _FIELDS[type(record)] = (names, read)
    return got[0], got[1](record)


def _raw(record: Record, run_id: str | None) -> dict[str, Any]:
    """One JSON object per record: kind, source, run, lineno, ts, ranks, then its fields
    (non-finite floats still in: ``_clean`` makes them None)."""
    meta = record.meta
    out: dict[str, Any] = {
        "kind": KIND[type(record)],
        "source": meta.source,
        "run_id": run_id,
        "lineno": meta.lineno,
        "ts": None if meta.ts is None else meta.ts.isoformat(),
        "ranks": dict(meta.ranks),
    }
    names, values = _fields(record)
    out.update(zip(names, values, strict=True))
    if "extra" in out:
        out["extra"] = dict(out["extra"])
    if isinstance(record, SpecSample):
        out["per_position"] = list(record.per_position)
    return out


def record_line(record: Record, run_id: str | None = None) -> str:
    """A record as one line of JSON (no newline)."""
    out = _raw(record, run_id)
    if isinstance(record, _FLAT):
        try:
            return _ENCODE(out)
        except ValueError:  # a non-finite float: null, as _clean makes it
            pass
    return _ENCODE(_clean(out))


def _scalar(value: Any) -> str:
    """A field's JSON text as ``record_line`` writes it (non-finite floats are null)."""
    kind = type(value)
    if kind is float:
        return float.__repr__(value) if math.isfinite(value) else "null"
    if kind is int:
        return int.__repr__(value)
    return (
        "null"
        if value is None
        else "true"
        if value is True
        else "false"
        if value is False
        else _ENCODE(value)
    )


#: A column's JSON texts: one text every line shares, or each line's.
Column = str | Sequence[str]
#: How many of a column's first values are looked at to choose a table or a text per value.
_SAMPLE = 256


class _Template:
    """One ``%`` template for a batch's lines: what every line shares is in its text, each
    column that varies is a ``%s`` (so a line costs one formatting call, at C speed)."""

    def __init__(self, head: str) -> None:
        self._parts = [head.replace("%", "%%")]
        self._columns: list[Sequence[object]] = []

    def text(self, text: str) -> None:
        self._parts.append(text.replace("%", "%%"))

    def value(self, column: Column | Sequence[int]) -> None:
        if isinstance(column, str):
            self.text(column)
        else:
            self._parts.append("%s")
            self._columns.append(column)

    def lines(self) -> list[str]:
        """Each line, newline included (at least one column varies: the line number)."""
        template = "".join(self._parts) + "}\n"
        return list(map(template.__mod__, zip(*self._columns, strict=True)))


def _head(kind: type, source: str, run_id: str | None) -> str:
    return f'{{"kind": {_ENCODE(KIND[kind])}, "source": {_ENCODE(source)}, "run_id": {_ENCODE(run_id)}, "lineno": '


def _shared(table: dict[Any, str], column: Sequence[Any]) -> Column:
    """``column`` through ``table``: the one text when every line has it, the column itself
    when each of its texts is its own JSON (a log's integers mostly are)."""
    if len(table) == 1:
        return next(iter(table.values()))
    if all(map(eq, table, table.values())):
        return column
    return list(map(table.__getitem__, column))


def _column(values: Sequence[Any]) -> Column:
    """Each value's JSON text, encoded once per distinct value. A column is of one type
    (and None), so equal values have one text, but for -0.0, which equals 0.0: a float
    column holding a zero is looked at zero by zero. A column of distinct numbers (a
    throughput) is encoded value by value, at C speed."""
    if len(set(values[:_SAMPLE])) > _SAMPLE // 2:
        types = set(map(type, values))
        if types == {int}:
            return list(map(int.__repr__, values))
        if types == {float} and all(map(math.isfinite, values)):
            return list(map(float.__repr__, values))
    table = {v: _scalar(v) for v in set(values)}
    if any(type(v) is float and v == 0.0 for v in table) and any(
        type(v) is float and math.copysign(1.0, v) < 0 for v in filterfalse(None, values)
    ):
        return [_scalar(v) for v in values]
    return _shared(table, values)


def _stamps(stamps: Sequence[Stamp]) -> Column:
    """``"ts": …, "ranks": …`` of each line, once per distinct stamp (an ISO time needs no
    escaping). Lines share their stamp objects (one per prefix), so they are told apart
    by identity: hashing a time is dearer than its text is to reuse. With one ranks for
    all, each time's text is made at C speed."""
    ids = list(map(id, stamps))
    objects = dict(zip(ids, stamps, strict=True))
    times = list(map(itemgetter(0), objects.values()))
    ranks = {r: _ENCODE(dict(r)) for r in set(map(itemgetter(1), objects.values()))}
    if len(ranks) == 1 and None not in times:
        (text,) = ranks.values()
        stamp = '"ts": "%s", "ranks": ' + text.replace("%", "%%")
        table = dict(zip(objects, map(stamp.__mod__, map(datetime.isoformat, times)), strict=True))
    else:
        table = {i: f'"ts": {_iso(ts)}, "ranks": {ranks[r]}' for i, (ts, r) in objects.items()}
    return _shared(table, ids)


def _iso(ts: datetime | None) -> str:
    return "null" if ts is None else '"' + ts.isoformat() + '"'


def _extras(template: _Template, extras: Sequence[Extras]) -> None:
    """The ``extra`` objects: where every line has the same keys in the same order (a
    layout's lines do), each key is in the template and each value a column."""
    if len(set(map(len, extras))) == 1:
        pairs = list(zip(*extras, strict=True))
        keys = [set(map(itemgetter(0), column)) for column in pairs]
        if all(len(k) == 1 for k in keys) and len({k for (k,) in keys}) == len(keys):
            template.text('"extra": {')
            for i, ((key,), column) in enumerate(zip(keys, pairs, strict=True)):
                template.text(("" if i == 0 else ", ") + _ENCODE(key) + ": ")
                template.value(_column(list(map(itemgetter(1), column))))
            template.text("}")
            return
    template.text('"extra": ')
    template.value(_shared({extra: _extra(extra) for extra in set(extras)}, extras))


def _extra(extra: Extras) -> str:
    """One ``extra`` object (a key twice: the last wins, as in ``dict``)."""
    return _ENCODE(_clean(dict(extra)))


def _rows_lines(kind: type, head: str, rows: Sequence[tuple[Any, ...]]) -> list[str]:
    """Each row's JSON line (a row: stamp, ``kind``'s fields but ``meta``, line number;
    the batch's ``prefill_rows``)."""
    if not rows:
        return []
    columns = list(zip(*rows, strict=True))
    template = _Template(head)
    template.value(columns[-1])
    template.text(", ")
    template.value(_stamps(columns[0]))
    for name, column in zip(_names(kind), columns[1:-1], strict=True):
        template.text(", ")
        if name == "extra":
            _extras(template, column)
        else:
            template.text(f'"{name}": ')
            template.value(_column(column))
    return template.lines()


def _int_text(text: str) -> str:
    return str(int(text))


def _f2_text(text: str) -> str:
    return float.__repr__(float(text))


def _bool_text(text: str) -> str:
    return "true" if text == "True" else "false"


#: A layout's float texts whose ``repr`` may not be the text less its trailing zeros:
#: a leading zero, or a value under 1e-4 (``repr`` writes ``5e-05``).
_ODD_F2 = re.compile(r"^0[0-9]|^0\.0000", re.M)
#: The longest float text that holds at most 15 digits (``repr`` gives such a value's digits back).
_EXACT_F2 = 16


def _f2s(column: Sequence[str]) -> Column:
    """JSON texts of a float column's texts (a layout's are digits, a point, digits):
    through a table where the column holds few values. Else each text less its trailing
    zeros is ``repr`` of its value where it has at most 15 digits and is between 1e-4 and
    1e16, which ``str.rstrip`` finds at C speed, five times faster than ``repr(float())``."""
    if len(set(column[:_SAMPLE])) <= _SAMPLE * 3 // 4:
        return _shared({t: _f2_text(t) for t in set(column)}, column)
    if max(map(len, column)) > _EXACT_F2 or _ODD_F2.search("\n".join(column)):
        return list(map(float.__repr__, map(float, column)))
    texts = list(map(str.rstrip, column, repeat("0")))
    for i in compress(range(len(texts)), map(str.endswith, texts, repeat("."))):
        texts[i] += "0"  # a whole number keeps one zero: 5.0
    return texts


def _texts(column: Sequence[str], text: Callable[[str], str]) -> Column:
    return _shared({t: text(t) for t in set(column)}, column)


_KIND_TEXT: dict[str, Callable[[Sequence[str]], Column]] = {
    "int": partial(_texts, text=_int_text),
    "f2": _f2s,
    "bool": partial(_texts, text=_bool_text),
}
_REQUIRED = ("running_req", "queue_req", "gen_throughput")


def _decode_lines(batch: DecodeBatch, head: str) -> tuple[list[int], list[str]] | None:
    """The Decode lines' numbers and JSON lines, from their layout's regex groups as text
    (each value converted once per distinct text, never into a record or a row); None
    where some line needs the parser (then the parser's records are written)."""
    offsets = batch.offsets()
    if len(offsets) != batch.n or not offsets:
        return None
    decode = list(map(batch.lines.__getitem__, offsets))
    first = decode[0]
    layout = record_layout(first[first.rfind(DECODE) + len(DECODE) :])
    rows = None if layout is None else layout.rx.findall("\n".join(decode))
    stamps = batch.stamps
    if layout is None or rows is None or len(rows) != len(decode) or None in map(itemgetter(0), stamps):
        return None
    columns = list(zip(*rows, strict=True))
    texts: dict[str, Column] = {}
    raw: dict[str, Sequence[str]] = {}
    extra: dict[str, Column] = {}
    for (key, kind), column in zip(layout.keys, columns[1:-1], strict=True):
        spec = DECODE_FIELDS.get(key)
        if spec is None:
            extra[key] = _KIND_TEXT[kind](column)
        else:  # the last of several keys for one field wins, as in the parser
            texts[spec[0]], raw[spec[0]] = _KIND_TEXT[kind](column), column
    if any(name not in texts for name in _REQUIRED):
        return None
    if "token_usage" not in texts:  # hybrid pools: the full-attention pool; HiSparse: the GPU pool
        pool = next((extra[p] for p in USAGE_POOLS if p in extra), None)
        if pool is not None:
            texts["token_usage"] = pool
    lens = raw.get("accept_len")
    if lens is not None:
        values = {t: float(t) for t in set(lens)}
        if not all(0.0 <= v <= MAX_ACCEPT_LEN for v in values.values()):
            return None  # the general parser reports these
        texts["accept_rate"] = _shared({t: _scalar(batch.rate(v)) for t, v in values.items()}, lens)
    texts["iteration"] = _texts(columns[0], lambda t: _int_text(t) if t else "null")
    texts["repeated"] = _texts(columns[-1], lambda t: _int_text(t) if t else "0")
    numbers = batch.linenos(offsets)
    template = _Template(head)
    template.value(numbers)
    template.text(", ")
    template.value(_stamps(stamps))
    for name in _names(DecodeSample):
        if name != "extra":
            template.text(f', "{name}": ')
            template.value(texts.get(name, "null"))
    template.text(', "extra": {')
    for i, (key, texts_of_key) in enumerate(extra.items()):
        template.text(("" if i == 0 else ", ") + _ENCODE(key) + ": ")
        template.value(texts_of_key)
    template.text("}")
    return numbers, template.lines()


def batch_text(batch: DecodeBatch, run_id: str | None) -> str:
    """Every record of the batch as JSON lines, in line order."""
    decode = _decode_lines(batch, _head(DecodeSample, batch.source, run_id))
    rows = batch.prefill_rows()
    prefill = None
    if rows is not None:
        head = _head(PrefillSample, batch.source, run_id)
        prefill = list(map(itemgetter(-1), rows)), _rows_lines(PrefillSample, head, rows)
    if decode is not None and prefill is not None:
        # Every Decode and Prefill line is written: the lines in line order, noise left out.
        out = [""] * len(batch.lines)
        first = batch.lineno
        for numbers, texts in (decode, prefill):
            deque(map(out.__setitem__, map(sub, numbers, repeat(first)), texts), maxlen=0)
        return "".join(out)
    return "".join(
        batch.in_line_order(
            None if decode is None else decode[1],
            None if prefill is None else prefill[1],
            lambda r: record_line(r, run_id) + "\n",
        )
    )


class JsonlWriter:
    """One JSON object per record, in line order; a Decode batch is written as its records."""

    #: The bulk path hands Prefill records on only to consumers that ask.
    wants_prefill = True

    def __init__(self, out: IO[str], tracker: RunTracker | None = None) -> None:
        """With ``tracker``, each record names the run it belongs to (``run_id``)."""
        self._out = out
        self._tracker = tracker

    def _run_id(self, source: str) -> str | None:
        run = self._tracker.current(source) if self._tracker is not None else None
        return run.run_id if run is not None else None

    def observe_run_start(self, run: Run) -> None:
        """Nothing to write: each record names its run."""

    def observe(self, record: Record) -> None:
        self._out.write(record_line(record, self._run_id(record.meta.source)) + "\n")

    def observe_batch(self, batch: DecodeBatch) -> None:
        self._out.write(batch_text(batch, self._run_id(batch.source)))
