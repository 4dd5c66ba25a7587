"""`oneshot --format jsonl`: one JSON object per record, written from a batch's columns.

A record's object is its kind, source, run, line number, time and ranks, then its fields
in declaration order. A Decode batch's lines are written straight from the layout's
columns: each distinct value is encoded once per column (a column holds few), each
distinct time and ranks once, and a line is one ``%`` of a template, byte for byte what
``json`` makes of the record (``record_line``, which every other record goes through).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import fields
from datetime import datetime
from itertools import filterfalse
from operator import attrgetter
from typing import IO, Any

from acceptmon.model import KIND, DecodeSample, Extras, PrefillSample, Record, Run, SpecSample
from acceptmon.runs import RunTracker
from acceptmon.runs.batch import DecodeBatch, Stamp


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


def record_json(record: Record, run_id: str | None = None) -> dict[str, Any]:
    """One JSON object per record: kind, source, run, lineno, ts, ranks, then its fields."""
    cleaned: dict[str, Any] = _clean(_raw(record, run_id))
    return cleaned


def _raw(record: Record, run_id: str | None) -> dict[str, Any]:
    """``record_json`` before non-finite floats become None."""
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
    """``record_json`` as one line of JSON (no newline)."""
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


def _column(values: Sequence[Any]) -> list[str]:
    """Each value's JSON text, encoded once per distinct value. A column is of one type
    (and None), so equal values have one text, but for -0.0, which equals 0.0: zeros are
    falsy, so only they are looked at one by one."""
    table = {v: _scalar(v) for v in set(values)}
    if 0.0 in table and any(
        type(v) is float and math.copysign(1.0, v) < 0 for v in filterfalse(None, values)
    ):
        return [_scalar(v) for v in values]
    return list(map(table.__getitem__, values))


def _iso(ts: datetime | None) -> str:
    return "null" if ts is None else '"' + ts.isoformat() + '"'


def _stamps(stamps: Sequence[Stamp]) -> list[str]:
    """``"ts": …, "ranks": …`` of each line, once per distinct stamp (an ISO time needs no
    escaping)."""
    ranks = {r: _ENCODE(dict(r)) for r in {stamp[1] for stamp in stamps}}
    table = {stamp: f'"ts": {_iso(stamp[0])}, "ranks": {ranks[stamp[1]]}' for stamp in set(stamps)}
    return list(map(table.__getitem__, stamps))


def _extras(extras: Sequence[Extras]) -> list[str]:
    """The ``extra`` object of each line, once per distinct one (each key encoded once)."""
    keys: dict[str, str] = {}

    def one(extra: Extras) -> str:
        for key, _ in extra:
            if key not in keys:
                keys[key] = _ENCODE(key)
        if len({key for key, _ in extra}) != len(extra):  # a key twice: the last wins, as in dict()
            return _ENCODE(_clean(dict(extra)))
        return "{" + ", ".join(f"{keys[key]}: {_scalar(value)}" for key, value in extra) + "}"

    table = {extra: one(extra) for extra in set(extras)}
    return list(map(table.__getitem__, extras))


def _lines(
    kind: type, source: str, run_id: str | None, rows: Sequence[tuple[Any, ...]] | None
) -> list[str] | None:
    """Each row's JSON line (rows end with their line number); None: no rows to write."""
    if rows is None:
        return None
    columns = list(zip(*rows, strict=True))
    if not columns:
        return []
    texts = [columns[-1], _stamps(columns[0]), *map(_column, columns[1:-2]), _extras(columns[-2])]
    head = f'{{"kind": {_ENCODE(KIND[kind])}, "source": {_ENCODE(source)}, "run_id": {_ENCODE(run_id)}, "lineno": '
    template = head.replace("%", "%%") + "%d, %s" + "".join(f', "{n}": %s' for n in _names(kind)) + "}\n"
    return [template % parts for parts in zip(*texts, strict=True)]


def batch_text(batch: DecodeBatch, run_id: str | None) -> str:
    """Every record of the batch as JSON lines, in line order."""
    decode = _lines(DecodeSample, batch.source, run_id, batch.decode_rows())
    prefill = _lines(PrefillSample, batch.source, run_id, batch.prefill_rows())
    return "".join(batch.in_line_order(decode, prefill, lambda r: record_line(r, run_id) + "\n"))


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
