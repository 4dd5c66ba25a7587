"""The bulk path every chunk takes (agent and one-shot): whole stretches of Decode lines at once.

A chunk is cut at its "event" lines (server starts, stops, crashes, vLLM
lines: anything that changes run state; ``parse/markers.py`` says which),
which go to the per-line parser one by one. Each stretch in between is
handled in bulk: its Decode lines by one regex over the joined block, in the
source's learned layout, handed on as one ``DecodeBatch`` (the store, the
detector and the jsonl writer take it whole), its Prefill lines by one
validating regex. Anything the bulk regexes do not account for line for line
(an unknown layout, a damaged or out-of-range value, no run yet) sends the
stretch down the per-line path, so results never differ from the records
path (a test checks this on every sample and golden case, for every consumer).
Most chunks hold no event: they go whole (``_whole``) once the few places the
per-line parser could read a marker in are searched, each distinct line once.

Chunks that hold a request dump (``--log-requests``) that quotes a marker,
or start inside one, go line by line there: which markers count depends on
the per-line parser's request state (see parse/line.py).
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Callable, Iterator, Sequence
from datetime import timezone
from functools import partial
from itertools import compress, repeat
from operator import contains, getitem, not_
from typing import TYPE_CHECKING, NamedTuple, Protocol, cast

from acceptmon.metrics.store import accept_len_range
from acceptmon.model import Chunk, DecodeSample, PrefillSample
from acceptmon.parse.line import ENTRY
from acceptmon.parse.markers import EVENT_MARKERS, EVENTS, REQUEST, REQUEST_MARKERS
from acceptmon.parse.sglang import DECODE, PREFILL, WINDOW
from acceptmon.runs.batch import Cells, DecodeBatch, decode_prefixes, floats
from acceptmon.sources.lines import Deferred, Lines

#: Every digit as ``0``: lines that differ only in numbers become one (``_holds``).
_FOLD = str.maketrans("123456789", "000000000")
_FOLDED_EVENTS = tuple(m.translate(_FOLD) for m in EVENT_MARKERS)
#: What a chunk is searched for to find request dumps → the markers starting with it: one
#: search for the two that start with ``Receive`` (each search of a whole chunk costs).
_REQUEST_SCANS = {
    scan: tuple(m for m in REQUEST_MARKERS if m.startswith(scan))
    for scan in ("Receive", *(m for m in REQUEST_MARKERS if not m.startswith("Receive")))
}
#: A dump from its marker to its line's end, and its continuation: the lines up to the next
#: log entry (or the text's end).
_CONTINUED = re.compile(rf"[^\n]*+(?:\n(?!{ENTRY.pattern})[^\n]*+)*+")
#: A line that starts no log entry (it would continue a request dump).
_NO_ENTRY = re.compile(rf"^(?!{ENTRY.pattern})", re.M)
#: The next line that starts a log entry (it ends a request dump).
_NEXT_ENTRY = re.compile(rf"\n(?:{ENTRY.pattern})")
#: A dump (by the ``_REQUEST_SCANS`` it starts with) whose next line is no new log entry, or
#: that ends the text: one that goes on (the one-line dumps a log is full of do not match).
_GOES_ON = {
    scan: re.compile(
        # The scan's own text first, outside the alternation: the regex engine then skips to it.
        re.escape(scan)
        + "(?:"
        + "|".join(re.escape(m[len(scan) :]) for m in markers)
        + rf")[^\n]*+(?:\n(?!{ENTRY.pattern})|\Z)"
    )
    for scan, markers in _REQUEST_SCANS.items()
}

if TYPE_CHECKING:
    from acceptmon.metrics.store import Store
    from acceptmon.model import Record
    from acceptmon.parse.layouts import BulkLayout
    from acceptmon.parse.line import LineParser
    from acceptmon.runs import RunTracker


class Presorted(Protocol):
    """A chunk as a scout sorted it in another process (``ingest/scout.py``)."""

    def sort(self, chunk: Chunk, block: str) -> Sorted | None:
        """``sort_lines(chunk.lines, block)``: the scout's answer where it is this chunk's."""
        ...


class Pipeline(Protocol):
    """What the bulk path needs of the pipeline it runs in (``acceptmon.ingest.Pipeline``)."""

    tracker: RunTracker
    store: Store
    #: The chunk being fed as a scout sorted it (``ingest/scout.py``), or None.
    presorted: Presorted | None

    @property
    def wants_prefill(self) -> bool:
        """Whether some consumer wants Prefill records (the jsonl writer): then a stretch
        of Prefill lines only, which makes no batch, is handed on record by record."""
        ...

    def route(self, record: Record) -> None: ...

    def batch(self, batch: DecodeBatch) -> None: ...

    def sink(self, record: Record) -> None: ...

    def contained(self, source: str, lineno: int, exc: Exception) -> None: ...


def feed(pipeline: Pipeline, chunk: Chunk, parser: LineParser, split: bool = True) -> None:
    lines = chunk.lines
    if parser.in_request:
        # The previous chunk ended inside a dump: line by line to its end (mostly just
        # this chunk's first line, a new entry), then the rest as a chunk of its own.
        start = _continuation(pipeline, parser, chunk, 0)
        if start < len(lines):
            rest = Chunk(chunk.source, lines[start:], chunk.lineno + start, chunk.end, chunk.path)
            feed(pipeline, rest, parser, split)
        return
    block = _joined(chunk)
    # Most chunks hold no event at all: then the whole chunk is one stretch, in bulk.
    if _clean(block) and _whole(pipeline, chunk, parser, block):
        return
    requests = any(m in block for m in _REQUEST_SCANS) and not _plain_requests(block)
    if requests and split:
        # Often only the last dump is the trouble (its continuation may go on in the
        # next chunk): the lines before it keep the bulk path, the rest are cut.
        last = max(block.rfind(m) for m in REQUEST_MARKERS)
        at = block.count("\n", 0, last)
        if at > 0:
            head = Chunk(chunk.source, lines[:at], chunk.lineno, None, chunk.path)
            tail = Chunk(chunk.source, lines[at:], chunk.lineno + at, chunk.end, chunk.path)
            feed(pipeline, head, parser, split=False)
            _cut(pipeline, tail, parser, tail.lines, True)
            return
    _cut(pipeline, chunk, parser, lines, requests)


class Sorted(NamedTuple):
    """A chunk's lines sorted for the bulk path (``sort_lines``): which hold a Decode marker
    (``decode``, one flag per line) and which of the others a Prefill marker (``prefill_marks``),
    the Decode and Prefill lines themselves, and each Decode line up to its marker (a list, or
    as a scout sent them: joined by newlines, split where a batch needs them all)."""

    decode: Sequence[int]
    prefill_marks: Sequence[int]
    decoded: Sequence[str]
    prefill: Sequence[str]
    prefixes: list[str] | str
    #: The Decode lines' values as a scout read them, by column (each group's), and the regex
    #: it read them with.
    rows: tuple[str, list[list[str]]] | None = None
    #: Whether a scout found the Prefill lines valid, and the regex it checked them with.
    prefill_valid: tuple[str, bool] | None = None
    #: The Decode lines' times as a scout read them (epoch seconds), and the zone offset it
    #: read them in.
    epochs: tuple[timezone, list[float]] | None = None

    @classmethod
    def of(
        cls,
        lines: Sequence[str],
        flags: tuple[bytes, bytes, str],
        rows: tuple[str, tuple[str, ...]] | None,
        prefill_valid: tuple[str, bool] | None,
        epochs: tuple[timezone, bytes] | None = None,
        starts: bytes | None = None,
    ) -> Sorted:
        """The lines sorted by the flags a scout sent (Decode flags, Prefill flags of the
        other lines, prefixes joined by newlines: no prefix holds one), with the rows it read
        (each group's column joined by newlines: no group holds one), kept as columns: the
        batch reads its values column by column, so rows would be zipped only to be unzipped;
        and the times it read (``array('d')`` bytes); where each line starts, if it sent that
        (``array('q')`` bytes: a chunk's ``Lines`` then cut any one line out, ``Lines.place``)."""
        decode, prefill_marks, prefixes = flags
        if starts is not None and isinstance(lines, Lines):
            placed = array("q")
            placed.frombytes(starts)
            lines.place(placed)
        n = decode.count(1)
        decoded = Picked(partial(_decoded, lines, decode), n, _DecodedAt(lines, decode, n))
        prefill = Picked(partial(_picked, lines, decode, prefill_marks), prefill_marks.count(1))
        read = None
        if rows is not None and decoded:
            read = rows[0], [column.split("\n") for column in rows[1]]
        times = None
        if epochs is not None and decoded:
            column = array("d")
            column.frombytes(epochs[1])
            times = epochs[0], column.tolist()
        return cls(
            decode,
            prefill_marks,
            decoded,
            prefill,
            prefixes if decoded else [],
            read,
            prefill_valid,
            times,
        )


class Picked(Deferred):
    """Lines picked by flags, counted without being picked: a chunk's Prefill and Decode lines
    are mostly only counted (a scout read them), and picking them out costs a pass over every
    line. Picked on first use as lines (read, joined, iterated); a slice is a view until then."""

    __slots__ = ("_one_of", "_pick")

    def __init__(
        self, pick: Callable[[], list[str]], n: int, one: Callable[[int], str | None] | None = None
    ) -> None:
        """``one(i)``: line ``i`` (0 ≤ i < n) where it can be read without picking them all, else None."""
        super().__init__(n)
        self._pick, self._one_of = pick, one

    def _make(self) -> list[str]:
        return self._pick()

    def _one(self, i: int) -> str | None:
        return None if self._one_of is None else self._one_of(i)


def _decoded(lines: Sequence[str], decode: bytes) -> list[str]:
    """The Decode lines: those the Decode flags mark."""
    return list(compress(lines, decode))


class _DecodedAt:
    """Decode line ``i`` of a chunk's lines, without picking them all: the first or the last
    (a batch reads its last values off the last) found by its flag, any other where the lines
    are placed (``Lines.place``: backfill reads each part's last); else None."""

    __slots__ = ("_decode", "_lines", "_n", "_offsets")

    def __init__(self, lines: Sequence[str], decode: bytes, n: int) -> None:
        self._lines, self._decode, self._n = lines, decode, n
        self._offsets: list[int] | None = None

    def __call__(self, i: int) -> str | None:
        lines = self._lines
        if i == 0:
            return lines[self._decode.find(1)]
        if i == self._n - 1:
            return lines[self._decode.rfind(1)]
        if not (isinstance(lines, Lines) and lines.placed):
            return None
        offsets = self._offsets
        if offsets is None:
            offsets = self._offsets = list(compress(range(len(lines)), self._decode))
        return lines[offsets[i]]


def _picked(lines: Sequence[str], decode: bytes, prefill_marks: bytes) -> list[str]:
    """The Prefill lines: those the Prefill flags mark among the lines without a Decode flag."""
    return list(compress(compress(lines, map(not_, decode)), prefill_marks))


def _joined(chunk: Chunk) -> str:
    """The chunk's lines joined: markers cannot span lines, so whole-chunk searches of the
    joined text answer "does any line hold one" at C speed."""
    return chunk.text if chunk.text is not None else "\n".join(chunk.lines)


def _clean(block: str) -> bool:
    """No carriage return or colour code (the per-line parser reads those lines)."""
    return "\x1b" not in block and "\r" not in block


def presort(chunk: Chunk) -> tuple[str, Sorted | None]:
    """The chunk's joined text, and its lines sorted as ``feed`` sorts them when it tries the
    chunk whole (None: it would not be one bulk stretch): what a scout hands on."""
    block = _joined(chunk)
    return block, sort_lines(chunk.lines, block) if _clean(block) else None


def sort_lines(lines: Sequence[str], block: str) -> Sorted | None:
    """The chunk's lines sorted for one bulk stretch, or None when something in them needs the
    per-line parser (then the chunk is cut at its events). ``block``: the lines joined, free
    of carriage returns and colour codes. Pure (the text alone decides): ``scout`` sorts a
    file's chunks in another process with it.

    Markers are searched only where the per-line parser could read a request or an event:
    in lines with neither batch marker, in Prefill lines in front of their marker, and in
    Decode lines' prefixes; each distinct digit-folded line once (``_distinct``). What
    follows the marker of a Decode line, or of a Prefill line, is read as that batch
    whatever it quotes (``_stretch`` then checks it against the learned layouts).
    """
    decode = list(map(contains, lines, repeat(DECODE)))
    others = list(compress(lines, map(not_, decode)))
    is_prefill = list(map(contains, others, repeat(PREFILL)))
    prefill = list(compress(others, is_prefill))
    decoded = list(compress(lines, decode))
    prefixes = decode_prefixes(decoded)
    heads: list[str] = list(
        map(getitem, prefill, map(slice, repeat(None), map(str.find, prefill, repeat(PREFILL))))
    )
    heads += dict.fromkeys(prefixes)
    # Batch lines in front of their marker apart: a request marker there means a dump
    # quoting a batch (never plain); elsewhere, dumps are plain unless they go on.
    headed = _distinct(heads)
    distinct = _distinct(list(compress(others, map(not_, is_prefill))))
    scans = tuple(scan for scan in _REQUEST_SCANS if scan in distinct or scan in headed)
    if scans and not _plain_dumps(block, scans, headed):
        return None
    if any(m in distinct or m in headed for m in _FOLDED_EVENTS):
        return None
    return Sorted(decode, is_prefill, decoded, prefill, prefixes)


def _whole(pipeline: Pipeline, chunk: Chunk, parser: LineParser, block: str) -> bool:
    """The whole chunk as one bulk stretch when nothing in it needs the per-line parser;
    False, with nothing done, when something may (then the chunk is cut at its events).
    Its lines are sorted here (``sort_lines``) unless a scout sorted them already; a Decode
    line that is no Decode batch (SGLang's ``#window`` lines) or is damaged fails the
    layout in ``_stretch``, and so this path."""
    ahead = pipeline.presorted
    found = ahead.sort(chunk, block) if ahead is not None else sort_lines(chunk.lines, block)
    if found is None:
        return False
    return _stretch(pipeline, chunk, parser, 0, len(chunk.lines), found)


def _plain_dumps(block: str, scans: tuple[str, ...], headed: str) -> bool:
    """``_plain_requests`` for ``_whole``, which searches every line but a batch line's end
    for event markers itself. A dump's own line quotes no batch when no request marker stands
    in front of a batch marker (``headed``: the batch lines' starts, folded); its continuation
    quotes none when every batch line starts a new log entry (then none continues a dump)
    and the text's end is no dump's (it may go on in the next chunk)."""
    if any(m in headed for scan in scans for m in _REQUEST_SCANS[scan]):
        return False
    if not any(_GOES_ON[scan].search(block) for scan in scans):
        return True
    if _NO_ENTRY.search(headed) is None:
        last = max(block.rfind(m) for scan in scans for m in _REQUEST_SCANS[scan])
        if _NEXT_ENTRY.search(block, last) is not None:
            return True
    return _plain_requests(block, scans)


def _cut(pipeline: Pipeline, chunk: Chunk, parser: LineParser, lines: Sequence[str], requests: bool) -> None:
    """Cut the chunk at its events; the stretches between them go in bulk.

    A Prefill line is only searched in front of its marker: the general parser
    also takes the first marker of a line, and Prefill lines are long. Request
    dumps are events too (whatever markers they quote): the parser classifies them, and so
    are SGLang's per-position lines (``Decode batch, #window: …``), which are no Decode batch.
    """
    event = EVENTS.search
    request = REQUEST.search if requests else _never
    window = WINDOW in "\n".join(lines)
    cuts = [
        i
        for i, t in enumerate(lines)
        if (
            DECODE not in t
            and (event(t, 0, t.find(PREFILL) % (len(t) + 1)) is not None or "\x1b" in t or "\r" in t)
        )
        or request(t) is not None
        or (window and WINDOW in t)
    ]
    start = _continuation(pipeline, parser, chunk, 0)
    for i in cuts:
        if i < start:
            continue
        if i > start:
            _stretch(pipeline, chunk, parser, start, i)
        _one(pipeline, parser, lines[i], chunk.lineno + i)
        start = _continuation(pipeline, parser, chunk, i + 1)
    if start < len(lines):
        _stretch(pipeline, chunk, parser, start, len(lines))


def _distinct(lines: list[str]) -> str:
    """The distinct lines with every digit folded to 0, joined: what a marker search of the
    lines needs to look at. Lines that differ only in their numbers (times, ports, ids: a
    busy log's noise) become one, and a marker in a line is in its folded line (markers
    fold alike), so a miss is exact; a hit may be false (digits a marker does not have)."""
    folded = "\n".join(lines).translate(_FOLD)
    return "\n".join(set(folded.split("\n")))


def _holds(lines: list[str]) -> bool:
    """Whether any line may hold an event marker (a miss is exact; a hit may be false,
    and ``_cut`` then finds nothing to cut at)."""
    distinct = _distinct(lines)
    return any(m in distinct for m in _FOLDED_EVENTS)


def _never(_text: str) -> None:
    return None


def _plain_requests(block: str, scans: tuple[str, ...] = tuple(_REQUEST_SCANS)) -> bool:
    """Whether every request dump is plain noise to the per-line parser too.

    True when no dump quotes a batch marker (the bulk regexes would see it) and
    the lines that continue it, up to the next log entry in this chunk (which
    ends the parser's request state), hold no marker either: then the dumps
    need no cut and the chunk keeps its bulk path. ``block`` is the chunk's lines joined;
    ``scans``: the ``_REQUEST_SCANS`` to look for (``_whole`` knows the others cannot matter).
    """
    if "\r" in block or "\x1b" in block:
        return _plain_requests_by_line(block)
    dumps: list[str] = []
    find, rfind, rest = block.find, block.rfind, _CONTINUED.match
    for scan in scans:
        markers = _REQUEST_SCANS[scan]
        at = find(scan)
        while at >= 0:
            if not block.startswith(markers, at):
                at = find(scan, at + 1)
                continue
            dump = rest(block, at)  # always matches (every part is optional)
            end = dump.end() if dump is not None else len(block)
            if end == len(block):  # the dump may go on in the next chunk
                return False
            dumps.append(block[rfind("\n", 0, at) + 1 : end])
            # A marker inside this dump's continuation adds no text to check.
            at = find(scan, end)
    return not _marked("\n".join(dumps))  # markers cannot span lines: one search for all


def _plain_requests_by_line(block: str) -> bool:
    """``_plain_requests`` where a line may hold a carriage return or a colour code."""
    for at in _found(block):
        start = block.rfind("\n", 0, at) + 1
        end = block.find("\n", at)
        if end < 0 or _marked(block[start:end]):
            return False
        while True:  # the continuation: unprefixed lines up to the next entry
            nxt_end = block.find("\n", end + 1)
            nxt = block[end + 1 : nxt_end if nxt_end >= 0 else len(block)]
            if "\r" not in nxt and "\x1b" not in nxt and ENTRY.match(nxt) is not None:
                break
            if nxt_end < 0 or _marked(nxt):
                return False
            end = nxt_end
    return True


def _found(block: str) -> Iterator[int]:
    """Where request markers start (``str.find``: far faster than a regex over a chunk)."""
    for marker in REQUEST_MARKERS:
        at = block.find(marker)
        while at >= 0:
            yield at
            at = block.find(marker, block.find("\n", at) % (len(block) + 1) or len(block))


def _marked(text: str) -> bool:
    """Whether the text holds a batch or event marker (substring searches: several times
    faster than the ``EVENTS`` alternation over the same text, with the same answer)."""
    return DECODE in text or PREFILL in text or _holds([text])


def _continuation(pipeline: Pipeline, parser: LineParser, chunk: Chunk, start: int) -> int:
    """Inside a request dump, go line by line until the parser sees the next log entry."""
    lines = chunk.lines
    while parser.in_request and start < len(lines):
        _one(pipeline, parser, lines[start], chunk.lineno + start)
        start += 1
    return start


def _one(pipeline: Pipeline, parser: LineParser, text: str, lineno: int) -> None:
    try:
        record = parser.parse(text, lineno)
        if record is None:
            return
        pipeline.route(record)
        if type(record) in (DecodeSample, PrefillSample):
            parser.learn(text, record)
    except Exception as exc:  # one line never stops the chunk (see pipeline)
        pipeline.contained(parser.source, lineno, exc)


def _lens(cells: Cells, col: int | None) -> tuple[list[str], list[float]] | None:
    """The accept lengths' text and values (the batch keeps both: its histogram counts text)."""
    if col is None:
        return None
    text = cells.column(col - 1)
    return text, floats(text)


def _in_range(lens: list[float] | None, bounds: tuple[float, float] | None) -> bool:
    """Whether every row's accept length is physically possible (else the per-line path counts it)."""
    if lens is None or bounds is None or not lens:
        return True
    return bounds[0] <= min(lens) and max(lens) <= bounds[1]


def _stretch(
    pipeline: Pipeline,
    chunk: Chunk,
    parser: LineParser,
    start: int,
    end: int,
    found: Sorted | None = None,
) -> bool:
    """Lines [start, end) hold no event: bulk if the learned layouts cover them, else line
    by line. ``found``: the whole chunk's lines as ``_whole`` sorted them (then False instead
    of line by line, with nothing done), with the rows and Prefill check a scout read with
    the same regexes, if it did."""
    seg = chunk.lines[start:end]
    if found is not None:
        decode, prefill, prefixes = found.decoded, found.prefill, found.prefixes
        marks: tuple[Sequence[int], Sequence[int]] | None = (found.decode, found.prefill_marks)
    else:
        decode = [t for t in seg if DECODE in t]
        prefill = [t for t in seg if DECODE not in t and PREFILL in t]
        prefixes, marks = None, None
    if not decode and not prefill:
        return True
    run = pipeline.tracker.current(chunk.source)
    rows = None
    lens = None
    if decode and run is not None:
        rows = _decode_rows(parser, decode, found)
        if rows is not None:
            lens = _lens(rows[0], rows[1].order[4])
            if not _in_range(lens[1] if lens else None, accept_len_range(run.spec)):
                rows = None
    # Before the first run, a line opens one: the per-line path knows which.
    if run is None or (decode and rows is None) or (prefill and not _prefill_valid(parser, prefill, found)):
        if found is not None:
            return False
        _by_line(pipeline, chunk, parser, start, end, bool(decode), bool(prefill))
        return True
    stats = pipeline.store.stats(chunk.source)
    stats.counters["prefill_batches"] += len(prefill)
    if rows is not None and run is not None:
        read, layout = rows
        pipeline.batch(
            DecodeBatch(
                chunk.source,
                run.spec,
                seg,
                chunk.lineno + start,
                decode,
                read,
                layout,
                parser.prefix_table,
                parser.prefix_epochs,
                parser.prefix_ranks,
                parser.parse,
                lens[1] if lens else None,
                prefixes,
                marks,
                lens[0] if lens else None,
                _epochs(parser, found, len(decode)),
            )
        )
    elif pipeline.wants_prefill and prefill:
        for offset, text in enumerate(seg):
            if PREFILL in text:
                record = parser.parse(text, chunk.lineno + start + offset)
                if record is not None:
                    pipeline.sink(record)
    return True


def _decode_rows(
    parser: LineParser, decode: Sequence[str], found: Sorted | None
) -> tuple[Cells, BulkLayout] | None:
    """``bulk_decode`` of the Decode lines: the values a scout read (by column), where it read
    them with the learned layout's own regex (the same regex over the same text: the same rows)."""
    if found is not None and found.rows is not None:
        given = parser.bulk_given(found.rows, len(decode))
        if given is not None:
            return Cells.of_columns(given[0]), given[1]
    block = "\n".join(decode)
    got = parser.bulk_decode(block, len(decode)) if _clean(block) else None
    return None if got is None else (Cells.of_rows(got[0]), got[1])


def _epochs(parser: LineParser, found: Sorted | None, n: int) -> list[float | None] | None:
    """The Decode lines' times a scout read, where it read them in this source's one offset
    (the same prefixes in the same offset: the same times, ``PrefixCache.epochs``)."""
    if found is None or found.epochs is None:
        return None
    fixed, epochs = found.epochs
    if len(epochs) != n or fixed != parser.fixed_zone():
        return None
    return cast(list[float | None], epochs)


def _prefill_valid(parser: LineParser, prefill: Sequence[str], found: Sorted | None) -> bool:
    """``bulk_prefill`` of the Prefill lines, or a scout's answer with the same regex."""
    if found is not None and found.prefill_valid is not None:
        valid = parser.prefill_given(found.prefill_valid)
        if valid is not None:
            return valid
    return parser.bulk_prefill("\n".join(prefill), len(prefill))


def _by_line(
    pipeline: Pipeline, chunk: Chunk, parser: LineParser, start: int, end: int, decode: bool, prefill: bool
) -> None:
    """Lines [start, end) one by one; where that is only for want of a run or a learned
    layout (the first lines of a log), the rest goes in bulk once the parser has them,
    as if the chunk ended there (the bulk path gives the same for any chunking)."""

    def ready() -> bool:
        return pipeline.tracker.current(chunk.source) is not None and parser.learned(decode, prefill)

    learning = not ready()
    lines, lineno = chunk.lines, chunk.lineno
    for i in range(start, end):
        text = lines[i]
        if DECODE in text or PREFILL in text:
            _one(pipeline, parser, text, lineno + i)
            if learning and ready():
                _stretch(pipeline, chunk, parser, i + 1, end)
                return
