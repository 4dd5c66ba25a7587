"""A stretch of plain Decode lines of one run, column by column: what the bulk path hands on.

The bulk path (``acceptmon.ingest.bulk``) accepts a stretch only when every Decode
line in it matched the source's learned layout, in range for the run, with no
event between them. It then hands the store, the detector and the jsonl
writer one ``DecodeBatch`` instead of a record per line. A column is built on
first use from the layout's regex groups, so a batch costs a Python object
per line only for what some consumer reads (the store reads sums and last
values; the detector reads times, lengths and loads; only the jsonl writer
needs whole records, and ``records`` parses them as the per-line path would).

Read-only by convention: consumers never change a batch or its columns.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from itertools import repeat
from operator import getitem, itemgetter
from typing import Any

from acceptmon.model import DecodeSample, Ranks, Record, SpecConfig
from acceptmon.parse.layouts import BulkLayout, DecodeValues
from acceptmon.parse.sglang import DECODE, PREFILL
from acceptmon.runs.rate import accept_rate

#: What a stamp column holds per line: (aware time or None, ranks), as the prefix parser gives it.
Stamp = tuple[datetime | None, Ranks]


class DecodeBatch:
    """``n`` Decode lines (and the Prefill/noise lines between them) of one source's current run.

    ``lines`` is the whole stretch (first line ``lineno``); ``rows`` the learned
    layout's groups of its Decode lines: those read on every line, which ``layout.order``
    places (running, queue, throughput, usage, accept len, printed rate, repeated; 1-based).
    """

    __slots__ = (
        "_cols",
        "_decode",
        "_epochs",
        "_layout",
        "_order",
        "_parse",
        "_rows",
        "_stamp",
        "lineno",
        "lines",
        "n",
        "source",
        "spec",
    )

    def __init__(
        self,
        source: str,
        spec: SpecConfig,
        lines: tuple[str, ...],
        lineno: int,
        decode: list[str],
        rows: list[tuple[str, ...]],
        layout: BulkLayout,
        stamp: Callable[[str], Stamp],
        epochs: Callable[[list[str]], list[float | None]],
        parse: Callable[[str, int], Record | None],
        lens: list[float] | None = None,
    ) -> None:
        """``lens``: the accept lengths already converted (the bulk path checks their range)."""
        self.source, self.spec = source, spec
        self.lines, self.lineno, self.n = lines, lineno, len(rows)
        self._decode, self._rows, self._layout, self._order = decode, rows, layout, layout.order
        self._stamp, self._epochs, self._parse = stamp, epochs, parse
        self._cols: dict[object, Any] = {} if lens is None else {"lens": lens}

    def _col(self, slot: int) -> list[str] | None:
        i = self._order[slot]
        if i is not None:
            return list(map(itemgetter(i - 1), self._rows))
        j = self._layout.full_order[slot]
        return None if j is None else list(map(itemgetter(j - 1), self._full_rows()))

    def _full_rows(self) -> list[tuple[str, ...]]:
        """Every wanted group of every line (the same regex, so the same matches, as ``rows``)."""
        return self._memo("full", lambda: self._layout.full.findall("\n".join(self._decode)))  # type: ignore[no-any-return]

    def _full(self, i: int) -> tuple[str, ...]:
        """Every wanted group of line ``i``: its one match, as in the block (each ends its line)."""
        rows = self._cols.get("full")
        if rows is not None:
            return rows[i]  # type: ignore[no-any-return]
        m = self._layout.full.search(self._decode[i])
        return m.groups("") if m is not None else self._full_rows()[i]

    def _memo(self, name: object, make: Callable[[], Any]) -> Any:
        try:
            return self._cols[name]
        except KeyError:
            value = self._cols[name] = make()
            return value

    @property
    def running(self) -> list[int]:
        return self._memo("running", lambda: ints(self._col(0) or []))  # type: ignore[no-any-return]

    @property
    def queue(self) -> list[int]:
        return self._memo("queue", lambda: ints(self._col(1) or []))  # type: ignore[no-any-return]

    @property
    def throughput(self) -> list[float]:
        """gen throughput (token/s) per line."""
        return self._memo("throughput", lambda: _floats(self._col(2)) or [])  # type: ignore[no-any-return]

    @property
    def lens(self) -> list[float] | None:
        """Accept lengths, or None when the layout prints none (speculation off)."""
        return self._memo("lens", lambda: _floats(self._col(4)))  # type: ignore[no-any-return]

    @property
    def repeated(self) -> list[int]:
        """``[repeated Nx across cluster]`` counts (0 where absent)."""

        def make() -> list[int]:
            col = self._col(6)
            if col is None or not any(col):  # the usual case: no line says it
                return [0] * self.n
            return [int(v) if v else 0 for v in col]

        return self._memo("repeated", make)  # type: ignore[no-any-return]

    def strata(self, edges: tuple[int, ...]) -> tuple[list[int], list[int]]:
        """Each line's load bucket (``bisect_right(edges, running)``) and accept len in
        hundredths (``round(len * 100)``), as ``detect.series.load_bucket`` and ``centi``
        give them: worked out once per distinct value (a batch holds few), and once per
        batch for the detector and the run table alike."""

        def make() -> tuple[list[int], list[int]]:
            return strata_of(edges, self.running, self.lens or [])

        return self._memo(("strata", edges), make)  # type: ignore[no-any-return]

    def values(self, i: int) -> DecodeValues:
        """Line ``i`` as the store's ``DecodeValues`` (running, queue, throughput, usage,
        accept len, printed rate, repeated)."""
        row, order = self._full(i), self._layout.full_order

        def group(slot: int) -> str | None:
            j = order[slot]
            return None if j is None else row[j - 1]

        usage, length, printed, repeated = group(3), group(4), group(5), group(6)
        return (
            int(group(0)),  # type: ignore[arg-type]
            int(group(1)),  # type: ignore[arg-type]
            float(group(2)),  # type: ignore[arg-type]
            float(usage) if usage is not None else None,
            float(length) if length is not None else None,
            float(printed) if printed is not None else None,
            int(repeated) if repeated else 0,
        )

    def last(self, slot: int) -> str | None:
        """The last line's group ``slot`` (0 running … 5 printed rate), unconverted."""
        i = self._order[slot]
        if i is not None:
            return self._rows[-1][i - 1]
        j = self._layout.full_order[slot]
        return None if j is None else self._full(self.n - 1)[j - 1]

    def _prefixes(self) -> list[str]:
        """Each Decode line up to its marker (``t[: t.rfind(DECODE)]``, mapped at C speed)."""
        decode = self._decode
        return self._memo(  # type: ignore[no-any-return]
            "prefixes", lambda: list(map(getitem, decode, map(slice, map(str.rfind, decode, repeat(DECODE)))))
        )

    @property
    def stamps(self) -> list[Stamp]:
        """(aware time, ranks) per Decode line, shared with the prefix cache (no copy per line)."""
        return self._memo("stamps", lambda: list(map(self._stamp, self._prefixes())))  # type: ignore[no-any-return]

    def stamp(self, i: int) -> Stamp:
        """The stamp of Decode line ``i`` alone."""
        stamps = self._cols.get("stamps")
        if stamps is not None:
            return stamps[i]  # type: ignore[no-any-return]
        text = self._decode[i]
        return self._stamp(text[: text.rfind(DECODE)])

    @property
    def epochs(self) -> list[float | None]:
        """Epoch seconds of each Decode line's time."""
        return self._memo("epochs", lambda: self._epochs(self._prefixes()))  # type: ignore[no-any-return]

    def last_epoch(self) -> float | None:
        epochs: list[float | None] | None = self._cols.get("epochs")
        if epochs is not None:
            return epochs[-1]
        last = self._decode[-1]
        return self._epochs([last[: last.rfind(DECODE)]])[0]

    def retime(self, stamps: list[Stamp], epochs: list[float | None]) -> None:
        """Replace the Decode lines' times (``runs.ahead``: times ahead of the host clock are
        not trusted); every reader of times, ``records`` included, sees these from now on."""
        self._cols["stamps"], self._cols["epochs"], self._cols["retimed"] = stamps, epochs, True

    def rate(self, accept_len: float | None) -> float | None:
        """The normalised accept rate of one line, as the run tracker fills it into a record."""
        return None if accept_len is None else accept_rate(accept_len, self.spec.slots)

    def records(self) -> list[Record]:
        """Every Decode and Prefill record of the stretch, in line order, exactly as the
        per-line path gives them (rates normalised as the run tracker does)."""
        out: list[Record] = []
        parse, lineno = self._parse, self.lineno
        stamps: list[Stamp] | None = self._cols["stamps"] if "retimed" in self._cols else None
        k = 0
        for text in self.lines:
            if DECODE in text or PREFILL in text:
                record = parse(text, lineno)
                if isinstance(record, DecodeSample):
                    if stamps is not None and k < len(stamps):
                        record = replace(record, meta=replace(record.meta, ts=stamps[k][0]))
                    k += 1
                if isinstance(record, DecodeSample) and record.accept_len is not None:
                    rate = self.rate(record.accept_len)
                    if rate is not None:
                        record = _with_rate(record, rate)
                if record is not None:
                    out.append(record)
            lineno += 1
        return out


def _floats(col: list[str] | None) -> list[float] | None:
    return None if col is None else floats(col)


def strata_of(edges: tuple[int, ...], running: list[int], lens: list[float]) -> tuple[list[int], list[int]]:
    """Load buckets and hundredths of each line, worked out once per distinct value (a batch
    holds few), as ``detect.series.load_bucket`` and ``centi`` give them."""
    bucket_of = {r: bisect_right(edges, r) for r in set(running)}
    centi_of = {v: round(v * 100) for v in set(lens)}
    return list(map(bucket_of.__getitem__, running)), list(map(centi_of.__getitem__, lens))


def floats(col: list[str]) -> list[float]:
    """``float`` of each, converted once per distinct text (a column holds few)."""
    table = {text: float(text) for text in set(col)}
    return list(map(table.__getitem__, col))


def ints(col: list[str]) -> list[int]:
    """``int`` of each, converted once per distinct text (a column holds few)."""
    table = {text: int(text) for text in set(col)}
    return list(map(table.__getitem__, col))


def _with_rate(record: DecodeSample, rate: float) -> DecodeSample:
    return replace(record, accept_rate=rate)
