"""A stretch of plain Decode lines of one run, column by column: what the bulk path hands on.

The bulk path (``acceptmon.ingest.bulk``) accepts a stretch only when every Decode
line in it matched the source's learned layout, in range for the run, with no
event between them. It then hands the store, the detector and the jsonl
writer one ``DecodeBatch`` instead of a record per line. A column is built on
first use from the layout's regex groups, so a batch costs a Python object
per line only for what some consumer reads (the store reads sums and last
values; the detector reads times, lengths and loads; only the jsonl writer
needs whole records, and ``records`` builds them from the layouts' columns, exactly as
the per-line path gives them; a line no layout captures whole is parsed).

Read-only by convention: consumers never change a batch or its columns.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime
from itertools import compress, islice, repeat
from operator import add, contains, getitem, itemgetter, le, not_
from typing import Any, Literal, TypeVar, cast, overload

from acceptmon.model import DecodeSample, Extras, Meta, PrefillSample, Ranks, Record, SpecConfig
from acceptmon.parse.fields import Kind, Value
from acceptmon.parse.layouts import BulkLayout, DecodeValues, RecordLayout, record_layout
from acceptmon.parse.markers import REQUEST
from acceptmon.parse.sglang import DECODE, DECODE_FIELDS, MAX_ACCEPT_LEN, PREFILL, PREFILL_FIELDS
from acceptmon.runs.rate import accept_rate
from acceptmon.sources.lines import Lines

#: What a stamp column holds per line: (aware time or None, ranks), as the prefix parser gives it.
Stamp = tuple[datetime | None, Ranks]
#: A Decode line's values in ``DecodeSample`` order after ``meta``: its stamp first, its line number last.
DecodeRow = tuple[
    Stamp,
    int,
    int,
    float,
    float | None,
    float | None,
    float | None,
    float | None,
    bool | None,
    int | None,
    int,
    Extras,
    int,
]
#: A Prefill line's values in ``PrefillSample`` order after ``meta``: its stamp first, its line number last.
PrefillRow = tuple[Stamp, int, int, int | None, int | None, int | None, float | None, Extras, int]
_T = TypeVar("_T")
#: How many of a column's first values ``floats`` looks at to choose how to convert it.
_SAMPLE = 64
#: Where a layout without ``token usage`` has it: a hybrid server's full-attention pool,
#: a HiSparse server's GPU pool (the first present).
USAGE_POOLS = ("full token usage", "gpu token usage")


def decode_prefixes(decoded: Sequence[str]) -> list[str]:
    """Each Decode line up to its (last) marker. A log's prefixes mostly have one width (a
    fixed time format and rank tag): then each is cut by one slice, not a slice made per line."""
    ends = list(map(str.rfind, decoded, repeat(DECODE)))
    if ends and min(ends) == max(ends):
        return list(map(itemgetter(slice(None, ends[0])), decoded))
    return list(map(getitem, decoded, map(slice, ends)))


class Cells:
    """The groups a layout's regex read on each Decode line of a batch: by row, as ``findall``
    gives them, or by column, as a scout sends them (``ingest/scout.py``). A batch reads its
    values a column at a time, so columns are kept as they come and rows are never zipped
    from them; rows give a column by picking each row's group. Read-only, as batches are."""

    __slots__ = ("_columns", "_rows", "n")

    def __init__(self, rows: list[tuple[str, ...]] | None, columns: list[list[str]] | None, n: int) -> None:
        self._rows, self._columns, self.n = rows, columns, n

    @classmethod
    def of_rows(cls, rows: list[tuple[str, ...]]) -> Cells:
        return cls(rows, None, len(rows))

    @classmethod
    def of_columns(cls, columns: list[list[str]]) -> Cells:
        """Columns of equal length, one per group (at least one)."""
        return cls(None, columns, len(columns[0]))

    def column(self, k: int) -> list[str]:
        """Group ``k`` (0-based) of every line (the cells' own list where they are columns)."""
        columns = self._columns
        if columns is not None:
            return columns[k]
        assert self._rows is not None
        return list(map(itemgetter(k), self._rows))

    def picked(self, k: int, picked: list[bool]) -> list[str]:
        """Group ``k`` of the lines ``picked`` flags."""
        columns = self._columns
        if columns is not None:
            return list(compress(columns[k], picked))
        assert self._rows is not None
        return list(map(itemgetter(k), compress(self._rows, picked)))

    def cell(self, i: int, k: int) -> str:
        """Group ``k`` of line ``i``."""
        columns = self._columns
        if columns is not None:
            return columns[k][i]
        assert self._rows is not None
        return self._rows[i][k]

    def part(self, i: int, j: int) -> Cells:
        """Lines ``[i, j)``."""
        columns = self._columns
        if columns is not None:
            return Cells.of_columns([column[i:j] for column in columns])
        assert self._rows is not None
        return Cells.of_rows(self._rows[i:j])


class DecodeBatch:
    """``n`` Decode lines (and the Prefill/noise lines between them) of one source's current run.

    ``lines`` is the whole stretch (first line ``lineno``); ``rows`` the learned
    layout's groups of its Decode lines: those read on every line, which ``layout.order``
    places (running, queue, throughput, usage, accept len, printed rate, repeated; 1-based).
    """

    __slots__ = (
        "_decode",
        "_epoch_col",
        "_epochs",
        "_full_rows_col",
        "_in_order",
        "_layout",
        "_len_bucket_col",
        "_len_counts",
        "_len_text",
        "_lens",
        "_marks",
        "_order",
        "_parse",
        "_prefix_col",
        "_queue",
        "_ranks",
        "_repeated",
        "_retimed",
        "_rows",
        "_running",
        "_stamp_col",
        "_stamps",
        "_strata",
        "_throughput",
        "_whole",
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
        lines: Sequence[str],
        lineno: int,
        decode: Sequence[str],
        rows: Cells,
        layout: BulkLayout,
        stamps: Callable[[list[str]], dict[str, Stamp]],
        epochs: Callable[[list[str]], list[float | None]],
        ranks: Callable[[list[str]], list[Ranks]],
        parse: Callable[[str, int], Record | None],
        lens: list[float] | None = None,
        prefixes: list[str] | str | None = None,
        marks: tuple[Sequence[int], Sequence[int]] | None = None,
        len_text: list[str] | None = None,
        epochs_read: list[float | None] | None = None,
    ) -> None:
        """``lens``: the accept lengths already converted (the bulk path checks their range);
        ``prefixes``: each Decode line up to its marker, where the bulk path has them (a list,
        or joined by newlines as a scout sent them);
        ``marks``: which lines hold a Decode marker, and which of the others a Prefill marker,
        where the bulk path has searched them (``offsets`` and ``prefill_offsets`` then need
        no search of their own); ``len_text``: the accept lengths as printed, where ``lens``
        were converted from them; ``epochs_read``: the lines' times as ``epochs`` gives them,
        where a scout read them."""
        self.source, self.spec = source, spec
        self.lines, self.lineno, self.n = lines, lineno, rows.n
        self._decode, self._rows, self._layout, self._order = decode, rows, layout, layout.order
        self._stamps, self._epochs, self._ranks, self._parse = stamps, epochs, ranks, parse
        # Columns, each built on first use (None: not yet; ``_lens`` stays None when the layout
        # prints no accept len, and asking again then costs two tuple reads).
        self._lens = lens
        self._len_text = len_text
        self._len_counts: Counter[str] | None = None
        self._len_bucket_col: tuple[tuple[float, ...], list[int]] | None = None
        self._full_rows_col: list[tuple[str, ...]] | None = None
        self._running: list[int] | None = None
        self._queue: list[int] | None = None
        self._throughput: list[float] | None = None
        self._repeated: list[int] | None = None
        self._strata: dict[tuple[int, ...], tuple[list[int], list[int]]] = {}
        # A scout's joined prefixes are read as lines: the first and last without a split.
        self._prefix_col = Lines(prefixes, rows.n) if isinstance(prefixes, str) else prefixes
        self._marks = marks
        self._stamp_col: list[Stamp] | None = None
        self._epoch_col = epochs_read
        self._retimed = False
        self._in_order: bool | None = None
        #: A part's batch and where the part lies in it (``part``): its number columns are
        #: the batch's, built once for all its parts and sliced (backfill cuts thousands).
        self._whole: tuple[DecodeBatch, int, int] | None = None

    def _col(self, slot: int) -> list[str] | None:
        i = self._order[slot]
        if i is not None:  # a column at a time: a batch reads few of them whole
            return self._rows.column(i - 1)
        j = self._layout.full_order[slot]
        return None if j is None else list(map(itemgetter(j - 1), self._full_rows()))

    def _picked(self, slot: int, picked: list[bool]) -> list[str]:
        """Group ``slot`` (one every layout has) of the lines ``picked`` flags, read off those alone."""
        i = self._order[slot]
        if i is not None:
            return self._rows.picked(i - 1, picked)
        j = self._layout.full_order[slot]
        assert j is not None
        return list(map(itemgetter(j - 1), compress(self._full_rows(), picked)))

    def _full_rows(self) -> list[tuple[str, ...]]:
        """Every wanted group of every line (the same regex, so the same matches, as ``rows``)."""
        rows = self._full_rows_col
        if rows is None:
            rows = self._full_rows_col = self._layout.full.findall("\n".join(self._decode))
        return rows

    def _full(self, i: int) -> tuple[str, ...]:
        """Every wanted group of line ``i``: its one match, as in the block (each ends its line)."""
        rows = self._full_rows_col
        if rows is not None:
            return rows[i]
        m = self._layout.full.search(self._decode[i])
        return m.groups("") if m is not None else self._full_rows()[i]

    @property
    def running(self) -> list[int]:
        col = self._running
        if col is None:
            whole = self._whole
            col = self._running = whole[0].running[whole[1] : whole[2]] if whole else ints(self._col(0) or [])
        return col

    @property
    def queue(self) -> list[int]:
        col = self._queue
        if col is None:
            whole = self._whole
            col = self._queue = whole[0].queue[whole[1] : whole[2]] if whole else ints(self._col(1) or [])
        return col

    def queued(self, i: int) -> int:
        """Line ``i``'s queue alone (the detector's last point of a batch), without the column."""
        col = self._queue
        return col[i] if col is not None else int(self._one(1, i))

    def _one(self, slot: int, i: int) -> str:
        """Line ``i``'s group ``slot``, unconverted (a group the layout has)."""
        j = self._order[slot]
        if j is not None:
            return self._rows.cell(i, j - 1)
        k = self._layout.full_order[slot]
        assert k is not None
        return self._full(i)[k - 1]

    @property
    def throughput(self) -> list[float]:
        """gen throughput (token/s) per line."""
        col = self._throughput
        if col is None:
            whole = self._whole
            col = self._throughput = (
                whole[0].throughput[whole[1] : whole[2]] if whole else _floats(self._col(2)) or []
            )
        return col

    def throughput_where(self, picked: list[bool]) -> list[float]:
        """gen throughput of the lines ``picked`` flags, converted for those alone unless
        the column is built (the cost meter reads it only where the time moves on)."""
        if self._throughput is None and self._whole is None:
            return list(map(float, self._picked(2, picked)))
        return list(compress(self.throughput, picked))

    @property
    def lens(self) -> list[float] | None:
        """Accept lengths, or None when the layout prints none (speculation off)."""
        col = self._lens
        if col is None:
            col = self._lens = _floats(self._col(4))
        return col

    def _lens_text(self) -> list[str]:
        """Accept lengths as printed (empty when the layout prints none)."""
        col = self._len_text
        if col is None:
            whole = self._whole
            col = self._len_text = whole[0]._lens_text()[whole[1] : whole[2]] if whole else self._col(4) or []
        return col

    def len_counts(self) -> Counter[str]:
        """How many lines print each accept length, by its text: a batch holds few, and text
        hashes once (a float hashes again at every lookup), so the store's histogram and the
        hundredths of ``strata`` convert only these."""
        counts = self._len_counts
        if counts is None:
            counts = self._len_counts = Counter(self._lens_text())
        return counts

    def len_histogram(self, edges: tuple[float, ...]) -> Counter[int]:
        """How many lines fall in each accept-length bucket (``bisect_left(edges, len)``): from
        the counts of distinct texts, or for a part (backfill cuts thousands, each holding
        most of its batch's distinct lengths) from its batch's bucket per line, found once."""
        whole = self._whole
        if whole is not None:
            return Counter(whole[0]._len_buckets(edges)[whole[1] : whole[2]])
        out: Counter[int] = Counter()
        for text, n in self.len_counts().items():
            out[bisect_left(edges, float(text))] += n
        return out

    def _len_buckets(self, edges: tuple[float, ...]) -> list[int]:
        """Each line's accept-length bucket, for the parts' ``len_histogram``."""
        got = self._len_bucket_col
        if got is None or got[0] != edges:
            table = {text: bisect_left(edges, float(text)) for text in self.len_counts()}
            got = self._len_bucket_col = (edges, list(map(table.__getitem__, self._lens_text())))
        return got[1]

    @property
    def repeated(self) -> list[int]:
        """``[repeated Nx across cluster]`` counts (0 where absent)."""
        col = self._repeated
        if col is None:
            whole = self._whole
            col = self._repeated = (
                whole[0].repeated[whole[1] : whole[2]] if whole else _counts(self._col(6), self.n)
            )
        return col

    def strata(self, edges: tuple[int, ...]) -> tuple[list[int], list[int]]:
        """Each line's load bucket (``bisect_right(edges, running)``) and accept len in
        hundredths (``round(len * 100)``), as ``detect.series.load_bucket`` and ``centi``
        give them: worked out once per distinct value (a batch holds few), and once per
        batch for the detector and the run table alike."""
        got = self._strata.get(edges)
        if got is None:
            whole = self._whole
            if whole is not None:
                buckets, centis = whole[0].strata(edges)
                i, j = whole[1], whole[2]
                got = self._strata[edges] = (buckets[i:j], centis[i:j])
            else:
                running, text = self.running, self._lens_text()
                bucket_of = {r: bisect_right(edges, r) for r in set(running)}
                centi_of = {t: round(float(t) * 100) for t in self.len_counts()}
                got = self._strata[edges] = (
                    list(map(bucket_of.__getitem__, running)),
                    list(map(centi_of.__getitem__, text)),
                )
        return got

    def values(self, i: int) -> DecodeValues:
        """Line ``i`` as the store's ``DecodeValues`` (running, queue, throughput, usage,
        accept len, printed rate, repeated)."""
        row = self._full(i)
        r, q, t, u, a, p, rep = self._layout.full_order
        repeated = row[rep - 1]
        return (
            int(row[r - 1]),
            int(row[q - 1]),
            float(row[t - 1]),
            float(row[u - 1]) if u is not None else None,
            float(row[a - 1]) if a is not None else None,
            float(row[p - 1]) if p is not None else None,
            int(repeated) if repeated else 0,
        )

    @overload
    def last(self, slot: Literal[0, 1, 2]) -> str: ...
    @overload
    def last(self, slot: Literal[3, 4, 5]) -> str | None: ...
    def last(self, slot: int) -> str | None:
        """The last line's group ``slot`` (0 running … 5 printed rate), unconverted: every
        Decode layout has running, queue and throughput (``DecodeOrder``)."""
        if self._order[slot] is None and self._layout.full_order[slot] is None:
            return None
        return self._one(slot, self.n - 1)

    def _prefixes(self) -> list[str]:
        """Each Decode line up to its marker (``decode_prefixes``), or as a scout sent them
        (joined by newlines: split here, when a reader needs them all)."""
        col = self._prefix_col
        if col is None:
            col = self._prefix_col = decode_prefixes(self._decode)
        elif isinstance(col, Lines):
            col = self._prefix_col = col.split()
        return col

    @property
    def stamps(self) -> list[Stamp]:
        """(aware time, ranks) per Decode line, shared with the prefix cache (no copy per line)."""
        col = self._stamp_col
        if col is None:
            prefixes = self._prefixes()
            # Looked up once per distinct prefix (lines share their second): the lookup is a
            # pure cache read, and a dict's C-level get per line is far cheaper than a call.
            table = self._stamps(prefixes)
            col = self._stamp_col = list(map(table.__getitem__, prefixes))
        return col

    @property
    def ranks(self) -> list[Ranks]:
        """Each Decode line's ranks: the stamps' second half, without building a time per
        prefix when the stamps are not wanted anyway (``read_log``'s rank column)."""
        stamps = self._stamp_col
        if stamps is not None:
            return list(map(itemgetter(1), stamps))
        return self._ranks(self._prefixes())

    def stamp(self, i: int) -> Stamp:
        """The stamp of Decode line ``i`` alone."""
        stamps = self._stamp_col
        if stamps is not None:
            return stamps[i]
        prefix = self._prefix(i)
        return self._stamps([prefix])[prefix]

    def _prefix(self, i: int) -> str:
        """Decode line ``i`` up to its marker: from the prefixes where the bulk path has them,
        else from the line."""
        col = self._prefix_col
        if col is not None:
            return col[i]
        text = self._decode[i]
        return text[: text.rfind(DECODE)]

    @property
    def epochs(self) -> list[float | None]:
        """Epoch seconds of each Decode line's time."""
        col = self._epoch_col
        if col is None:
            col = self._epoch_col = self._epochs(self._prefixes())
        return col

    def times_in_order(self) -> bool:
        """Whether every Decode line has a time, none earlier than the line's before it (the
        usual case): then the newest is the last, and a window need not check the order."""
        got = self._in_order
        if got is None:
            whole = self._whole
            if whole is not None and whole[0].times_in_order():
                got = True
            else:
                epochs = self.epochs
                timed = cast(list[float], epochs)
                got = None not in epochs and all(map(le, timed, islice(timed, 1, None)))
            self._in_order = got
        return got

    def last_epoch(self) -> float | None:
        epochs = self._epoch_col
        if epochs is not None:
            return epochs[-1]
        return self._epochs([self._prefix(-1)])[0]

    def retime(self, stamps: list[Stamp], epochs: list[float | None]) -> None:
        """Replace the Decode lines' times (``runs.ahead``: times ahead of the host clock are
        not trusted); every reader of times, ``records`` included, sees these from now on."""
        self._stamp_col, self._epoch_col, self._retimed, self._in_order = stamps, epochs, True, None

    def offsets(self) -> list[int]:
        """Where the stretch's Decode lines stand in ``lines`` (0-based): a batch cut at a
        Decode line cuts its stretch there (``part``)."""
        marks = self._marks
        decode = marks[0] if marks is not None else map(contains, self.lines, repeat(DECODE))
        return list(compress(range(len(self.lines)), decode))

    def prefill_offsets(self, offsets: list[int]) -> list[int]:
        """Where the Prefill lines (a Prefill marker and no Decode marker, as the bulk path
        counts them) stand in ``lines``; ``offsets``: ``offsets()``. Searched only among the
        lines that are no Decode line, unless the bulk path's ``marks`` say already."""
        marks = self._marks
        if marks is not None:
            return list(compress(compress(range(len(self.lines)), map(not_, marks[0])), marks[1]))
        lines = self.lines
        others = bytearray(b"\x01") * len(lines)
        deque(map(others.__setitem__, offsets, repeat(0)), maxlen=0)
        rest = list(compress(range(len(lines)), others))
        return list(compress(rest, map(contains, map(lines.__getitem__, rest), repeat(PREFILL))))

    def linenos(self, offsets: list[int]) -> list[int]:
        """The line numbers of the lines at ``offsets`` (``offsets``, ``prefill_offsets``)."""
        return list(map(add, offsets, repeat(self.lineno)))

    def part(self, i: int, j: int, offsets: list[int]) -> DecodeBatch:
        """Decode lines ``[i, j)`` as a batch of their own (``offsets``: ``offsets()``),
        with their stretch from line ``i`` (the first part from the stretch's start) to line
        ``j``: backfill stores a stretch up to each sample time, not all at once."""
        start = 0 if i == 0 else offsets[i]
        end = len(self.lines) if j == self.n else offsets[j]
        lens = self.lens
        part = DecodeBatch(
            self.source,
            self.spec,
            self.lines[start:end],
            self.lineno + start,
            self._decode[i:j],
            self._rows.part(i, j),
            self._layout,
            self._stamps,
            self._epochs,
            self._ranks,
            self._parse,
            None if lens is None else lens[i:j],
            None if self._prefix_col is None else self._prefixes()[i:j],
        )
        stamps, epochs = self._stamp_col, self._epoch_col
        if self._retimed and stamps is not None and epochs is not None:
            part.retime(stamps[i:j], epochs[i:j])
        else:
            part._epoch_col = None if epochs is None else epochs[i:j]
            part._stamp_col = None if stamps is None else stamps[i:j]
        part._whole = (self, i, j)
        return part

    def rate(self, accept_len: float | None) -> float | None:
        """The normalised accept rate of one line, as the run tracker fills it into a record."""
        return None if accept_len is None else accept_rate(accept_len, self.spec.slots)

    def records(self) -> list[Record]:
        """Every Decode and Prefill record of the stretch, in line order, exactly as the
        per-line path gives them (rates normalised as the run tracker does): built from the
        layouts' columns where they capture every value, else parsed line by line."""
        source = self.source
        decode, prefill = self.decode_rows(), self.prefill_rows()
        return self.in_line_order(
            None if decode is None else [_decode_sample(source, *row) for row in decode],
            None if prefill is None else [_prefill_sample(source, *row) for row in prefill],
            _same,
        )

    def in_line_order(
        self,
        decode: list[_T] | None,
        prefill: list[_T] | None,
        other: Callable[[Record], _T],
    ) -> list[_T]:
        """One ``_T`` per record of the stretch, in line order: ``decode``/``prefill`` (one
        per such line, from ``decode_rows``/``prefill_rows``; None: parse those lines), and
        ``other`` of each record the parser had to make (normalised as ``records`` says)."""
        out: list[_T] = []
        parse, lineno = self._parse, self.lineno
        stamps = self._stamp_col if self._retimed else None
        k = j = 0
        for text in self.lines:
            if decode is not None and DECODE in text:
                out.append(decode[k])
                k += 1
            elif prefill is not None and PREFILL in text and DECODE not in text:
                out.append(prefill[j])
                j += 1
            elif DECODE in text or PREFILL in text:
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
                    out.append(other(record))
            lineno += 1
        return out

    def decode_rows(self) -> list[DecodeRow] | None:
        """Each Decode line's values in ``DecodeSample`` field order after ``meta`` (its stamp
        first, its line number last), converted column by column; None when the layout does not capture every
        value or a line needs the parser's own handling (no time in its prefix)."""
        layout = self._layout.record
        offsets = self.offsets()
        if layout is None or len(offsets) != self.n:
            return None
        got = _columns(layout, self._decode)
        stamps = self.stamps
        if got is None or any(ts is None for ts, _ in stamps):
            return None
        iterations, known, extras = got
        usage = known.get("token_usage")
        if usage is None:  # hybrid pools: the full-attention pool; HiSparse: the GPU pool
            names = [key for key, _ in layout.keys]
            for pool in USAGE_POOLS:
                if pool in names:
                    usage = [dict(ex)[pool] for ex in extras]
                    break
        lens = known.get("accept_len")
        if lens is not None and not all(0.0 <= v <= MAX_ACCEPT_LEN for v in lens):
            return None  # the general parser reports these
        none = [None] * self.n
        rates = none if lens is None else list(map({a: self.rate(a) for a in set(lens)}.__getitem__, lens))
        return list(
            zip(
                stamps,
                known["running_req"],
                known["queue_req"],
                known["gen_throughput"],
                usage or none,
                lens or none,
                known.get("accept_rate_printed", none),
                rates,
                known.get("graph", none),
                iterations,
                _counts(known.get("", none), self.n),
                extras,
                self.linenos(offsets),
                strict=True,
            )
        )

    def prefill_rows(self) -> list[PrefillRow] | None:
        """Each Prefill line's values in ``PrefillSample`` field order after ``meta`` (its
        stamp first, its line number last), as ``decode_rows``; None where some line needs the general parser."""
        at = self.prefill_offsets(self.offsets())
        if not at:
            return []
        lines = list(map(self.lines.__getitem__, at))
        block = "\n".join(lines)
        if "\r" in block or "\x1b" in block or block.count(PREFILL) != len(lines):
            return None
        first = lines[0]
        layout = record_layout(first[first.rfind(PREFILL) + len(PREFILL) :], PREFILL_FIELDS)
        got = None if layout is None else _columns(layout, lines, PREFILL_FIELDS)
        if got is None:
            return None
        prefixes = [t[: t.rfind(PREFILL)] for t in lines]
        distinct = set(prefixes)
        if any(REQUEST.search(p) for p in distinct):
            return None  # a request dump's text, which the parser does not count
        table = self._stamps(prefixes)
        stamps = list(map(table.__getitem__, prefixes))
        if any(ts is None for ts, _ in stamps):
            return None
        _, known, extras = got
        none = [None] * len(lines)
        return list(
            zip(
                stamps,
                known["new_seq"],
                known["new_token"],
                known.get("cached_token", none),
                known.get("running_req", none),
                known.get("queue_req", none),
                known.get("token_usage", none),
                extras,
                self.linenos(at),
                strict=True,
            )
        )


def _columns(
    layout: RecordLayout, lines: Sequence[str], fields: dict[str, tuple[str, Kind]] = DECODE_FIELDS
) -> tuple[list[int | None], dict[str, list[Any]], list[Extras]] | None:
    """The iteration column, the first-class fields' columns by name (the repeat count under
    ""), and each line's extras, from ``layout``'s one match per line; None unless every
    line matched."""
    rows = layout.rx.findall("\n".join(lines))
    if len(rows) != len(lines):
        return None
    n = len(rows)
    cols: list[tuple[str, ...]] = list(zip(*rows, strict=True))
    known: dict[str, list[Any]] = {"": list(cols[-1])}
    extra: list[list[tuple[str, Value]]] = []
    for (key, kind), col in zip(layout.keys, cols[1:-1], strict=True):
        values: list[Any] = (
            ints(list(col))
            if kind == "int"
            else floats(list(col))
            if kind == "f2"
            else [v == "True" for v in col]
        )
        spec = fields.get(key)
        if spec is None:
            extra.append(list(zip([key] * n, values, strict=True)))
        else:
            known[spec[0]] = values  # the last of several keys for one field wins, as in the parser
    extras: list[Extras] = list(zip(*extra, strict=True)) if extra else [()] * n
    return [int(v) if v else None for v in cols[0]], known, extras


def _decode_sample(
    source: str,
    stamp: Stamp,
    running: int,
    queue: int,
    throughput: float,
    usage: float | None,
    accept: float | None,
    printed: float | None,
    rate: float | None,
    graph: bool | None,
    iteration: int | None,
    repeated: int,
    extra: Extras,
    lineno: int,
) -> DecodeSample:
    return DecodeSample(
        Meta(source, lineno, stamp[0], stamp[1]),
        running,
        queue,
        throughput,
        usage,
        accept,
        printed,
        rate,
        graph,
        iteration,
        repeated,
        extra,
    )


def _floats(col: list[str] | None) -> list[float] | None:
    return None if col is None else floats(col)


def _counts(col: list[str] | None, n: int) -> list[int]:
    if col is None or not any(col):  # the usual case: no line says it
        return [0] * n
    return [int(v) if v else 0 for v in col]


def strata_of(edges: tuple[int, ...], running: list[int], lens: list[float]) -> tuple[list[int], list[int]]:
    """Load buckets and hundredths of each line, worked out once per distinct value (a batch
    holds few), as ``detect.series.load_bucket`` and ``centi`` give them."""
    bucket_of = {r: bisect_right(edges, r) for r in set(running)}
    centi_of = {v: round(v * 100) for v in set(lens)}
    return list(map(bucket_of.__getitem__, running)), list(map(centi_of.__getitem__, lens))


def floats(col: list[str]) -> list[float]:
    """``float`` of each, converted once per distinct text where a column holds few
    (accept lengths, usage: a table is then three times as fast); a column whose values
    nearly all differ (throughputs) is converted value by value, which is then faster."""
    if len(set(col[:_SAMPLE])) > _SAMPLE * 7 // 8:
        return list(map(float, col))
    distinct = set(col)  # cheap: text keeps its hash for the lookups below
    if 2 * len(distinct) > len(col):
        return list(map(float, col))
    table = dict(zip(distinct, map(float, distinct), strict=True))
    return list(map(table.__getitem__, col))


def ints(col: list[str]) -> list[int]:
    """``int`` of each, converted once per distinct text (a column holds few)."""
    distinct = set(col)
    table = dict(zip(distinct, map(int, distinct), strict=True))
    return list(map(table.__getitem__, col))


def _prefill_sample(
    source: str,
    stamp: Stamp,
    new_seq: int,
    new_token: int,
    cached: int | None,
    running: int | None,
    queue: int | None,
    usage: float | None,
    extra: Extras,
    lineno: int,
) -> PrefillSample:
    return PrefillSample(
        Meta(source, lineno, stamp[0], stamp[1]), new_seq, new_token, cached, running, queue, usage, extra
    )


def _same(record: Record) -> Record:
    return record


def _with_rate(record: DecodeSample, rate: float) -> DecodeSample:
    return replace(record, accept_rate=rate)
