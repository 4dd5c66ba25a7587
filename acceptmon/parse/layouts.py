"""Learned Decode-line layouts: the fast path for one-shot throughput.

A server prints the same Decode layout line after line. After the general
parser has accepted a line, its layout (the key sequence) is compiled into
one anchored regex whose value patterns are exactly as strict as the
general parser's checks. Later lines that match it skip the general parser;
any line that does not match falls back to it, so the fast path can only be
slower, never different.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from acceptmon.parse import sglang
from acceptmon.parse.fields import Kind, is_f2, is_int, split_pairs

# As strict as fields.is_int / is_f2 (digit caps included); nan/inf lines fall back
# to the general parser. An unknown value stops at "[" (possessive, so a long
# run never backtracks): a ``[repeated Nx …]`` tail is then left to the tail pattern.
_INT = "[0-9]{1,18}+"
_F2 = r"[0-9]{1,18}+\.[0-9]{1,18}+"
_PATTERN = {"int": _INT, "f2": _F2, "bool": "True|False", None: "[^,\n\\[]*+"}
#: An unknown value holding a bracket of numbers (DSPARK's ``4.02 [3.80, 4.24]``).
_BRACKETED = r"[^,\n\[]*+\[[0-9., ]{0,64}+\]"

#: What the aggregate needs, in this order; missing ones become None.
WANTED = ("running_req", "queue_req", "gen_throughput", "token_usage", "accept_len", "accept_rate_printed")

#: (running_req, queue_req, gen_throughput, token_usage, accept_len, accept_rate_printed, repeated)
DecodeValues = tuple[int, int, float, float | None, float | None, float | None, int]
#: Where a Decode layout's regex has each of DecodeValues' fields (1-based group; None where
#: the layout lacks it): every Decode line has the first three, and the repeat group is always there.
DecodeOrder = tuple[int, int, int, int | None, int | None, int | None, int]


def _kind(key: str, fields: dict[str, tuple[str, Kind]]) -> str | None:
    spec = fields.get(key)
    if spec is not None:
        return spec[1]
    return sglang.CHECKED_EXTRAS.get(key) or ("int" if key.startswith("#") else None)


Shape = tuple[str, tuple[int | None, ...]]


#: The fields a bulk regex captures on every line; the rest of WANTED only where asked for.
PER_LINE = ("running_req", "queue_req", "gen_throughput", "accept_len")


def compile_shape(
    body: str,
    fields: dict[str, tuple[str, Kind]] = sglang.DECODE_FIELDS,
    wanted: tuple[str, ...] = WANTED,
    captured: tuple[str, ...] | None = None,
) -> Shape | None:
    """Build the regex for ``body``'s layout; None when it should not be cached.

    ``captured`` (default: all of ``wanted``) are the fields given a group; the others
    match as strictly, without one (``order`` then says None for them)."""
    if "=" in body or "[repeated" in body or not body.startswith((".", ",", " [")):
        return None
    rest = body.lstrip(". ,")
    if rest.startswith("["):
        rest = rest.partition("]")[2].lstrip(", ")
    parts: list[str] = []
    slot: dict[str, int] = {}
    seen: set[str] = set()
    pairs = split_pairs(rest)
    keys = [key for key, _ in pairs]
    for key, value in pairs:
        if not key:
            return None
        kind = _kind(key, fields)
        spec = fields.get(key)
        field = spec[0] if spec else None
        if key == "full token usage" and "token usage" not in keys:
            field = "token_usage"  # as the general parser does for hybrid pools
        if key == "gpu token usage" and "token usage" not in keys and "full token usage" not in keys:
            field = "token_usage"  # HiSparse: its GPU pool replaces #token/token usage
        pattern = _BRACKETED if kind is None and "[" in value else _PATTERN[kind]
        if field in wanted and field not in seen:
            seen.add(field)
            if captured is not None and field not in captured:
                parts.append(f"{re.escape(key)}: (?:{pattern})")
                continue
            slot[field] = len(slot) + 1
            parts.append(f"{re.escape(key)}: ({pattern})")
        else:
            parts.append(f"{re.escape(key)}: (?:{pattern})")
    head = r"(?:\.|,| \[[0-9]+\],) "
    tail = r"(?:, )?(?:\s*+\[repeated ([0-9]{1,9})x across cluster\].*)?"
    order = (*(slot.get(f) for f in wanted), len(slot) + 1)
    return head + ", ".join(parts) + tail, order


def _line_regex(marker: str, body: str) -> re.Pattern[str]:
    """One match per line of a joined block, from the marker to the end of the line.

    Starting with a literal (``] `` and the marker) lets the regex engine skip to
    it (a look-behind there would not); no value pattern crosses a newline, and
    matches end at a line's end, so a count equal to the number of lines means
    every line matched once, from its (only valid) marker.
    """
    return re.compile(f"\\] {re.escape(marker)}{body}$", re.M)


@dataclass(frozen=True, slots=True)
class BulkLayout:
    """How a block's rows read: ``order`` indexes the rows' groups (1-based, None where the
    bulk regex has no group for the slot); ``full`` is the same line regex with a group for
    every wanted field, in ``full_order``, for the few lines whose every value is read."""

    order: tuple[int | None, ...]
    full: re.Pattern[str]
    full_order: DecodeOrder
    #: Every value of the layout, for whole records (None: some value is free text).
    record: RecordLayout | None = None


@dataclass(frozen=True, slots=True)
class RecordLayout:
    """A Decode layout with a group for every value: jsonl builds records from these columns
    instead of re-parsing each line. Group 1 is the ``[N]`` iteration, then one per ``keys``
    (key, kind), then the repeat count. Only layouts whose every value has an exact pattern
    qualify (a checked kind, or an unknown field's int, f2 or bool as the learned line printed
    it), so a matching line converts exactly as the general parser converts it."""

    rx: re.Pattern[str]
    keys: tuple[tuple[str, str], ...]


def _loose_kind(value: str) -> str | None:
    """The kind whose pattern matches exactly the values ``fields.loose`` types as this one
    (an unknown field's later values of another shape miss the regex: the parser reads them)."""
    if is_int(value):
        return "int"
    if is_f2(value):
        return "f2"
    return "bool" if value in ("True", "False") else None


def record_layout(
    body: str, fields: dict[str, tuple[str, Kind]] = sglang.DECODE_FIELDS
) -> RecordLayout | None:
    """``body``'s layout with every value captured; None when some value would need the
    general parser's looser handling (free text, hybrid pools, brackets, a repeated key)."""
    if "=" in body or "[repeated" in body or not body.startswith((".", ",", " [")):
        return None
    rest = body.lstrip(". ,")
    if rest.startswith("["):
        rest = rest.partition("]")[2].lstrip(", ")
    pairs = split_pairs(rest)
    keys: list[tuple[str, str]] = []
    for key, value in pairs:
        kind = _kind(key, fields) or _loose_kind(value)
        if not key or kind not in ("int", "f2", "bool") or key in dict(keys):
            return None
        keys.append((key, kind))
    head = r"(?:\.|,| \[([0-9]{1,9})\],) "
    parts = [f"{re.escape(key)}: ({_PATTERN[kind]})" for key, kind in keys]
    tail = r"(?:, )?(?:\s*+\[repeated ([0-9]{1,9})x across cluster\].*)?"
    marker = sglang.DECODE if fields is sglang.DECODE_FIELDS else sglang.PREFILL
    return RecordLayout(_line_regex(marker, head + ", ".join(parts) + tail), tuple(keys))


class DecodeShapes:
    """Per-source cache of compiled layouts (bounded)."""

    __slots__ = ("_bulk", "_limit", "_shapes")

    def __init__(self, limit: int = 8) -> None:
        self._shapes: list[tuple[re.Pattern[str], re.Pattern[str], DecodeOrder]] = []
        #: The first layout's bulk regex (per-line fields only) and how its rows read.
        self._bulk: tuple[re.Pattern[str], BulkLayout] | None = None
        self._limit = limit

    def __len__(self) -> int:
        return len(self._shapes)

    def match(self, body: str) -> DecodeValues | None:
        for rx, _, order in self._shapes:
            m = rx.fullmatch(body)
            if m is not None:
                return _values(m, order)
        return None

    def bulk(self, block: str, n: int) -> tuple[list[tuple[str, ...]], BulkLayout] | None:
        """Rows of ``n`` newline-joined Decode lines if all share the first layout.

        Rows hold the groups of the fields read on every line (``PER_LINE`` and the
        repeat count; fewer groups make a faster regex); the layout says which is which.
        """
        if self._bulk is None:
            return None
        lines_rx, layout = self._bulk
        rows = lines_rx.findall(block)
        return (rows, layout) if len(rows) == n else None

    @property
    def bulk_pattern(self) -> str | None:
        """The regex ``bulk`` reads rows with (None: none learned yet): rows found with the
        same pattern elsewhere (a scout) are this layout's rows."""
        return self._bulk[0].pattern if self._bulk is not None else None

    def given(self, found: tuple[str, list[list[str]]], n: int) -> tuple[list[list[str]], BulkLayout] | None:
        """``bulk``'s answer, by column (each group's values), for ``n`` lines read elsewhere
        (a scout) with a regex: when that is this layout's (the same regex over the same text
        gives the same rows)."""
        columns = found[1]
        if (
            self._bulk is None
            or self._bulk[0].pattern != found[0]
            or not columns
            or any(len(column) != n for column in columns)
        ):
            return None
        return columns, self._bulk[1]

    def learn(self, body: str) -> None:
        shape = compile_shape(body)
        if shape is not None and len(self._shapes) < self._limit:
            pattern, slots = shape
            order = _decode_order(slots)
            if order is None:
                return
            full = _line_regex(sglang.DECODE, pattern)
            self._shapes.append((re.compile(pattern), full, order))
            if self._bulk is None:
                few = compile_shape(body, captured=PER_LINE)
                if few is not None:  # always: the same body compiles the same way
                    layout = BulkLayout(few[1], full, order, record_layout(body))
                    self._bulk = (_line_regex(sglang.DECODE, few[0]), layout)


def _decode_order(order: tuple[int | None, ...]) -> DecodeOrder | None:
    """``order`` as a Decode layout's, or None without the fields every Decode line has
    (the general parser requires them, so a layout it accepted always has them)."""
    r, q, t, u, a, p, rep = order
    if r is None or q is None or t is None or rep is None:
        return None
    return r, q, t, u, a, p, rep


def _values(m: re.Match[str], order: DecodeOrder) -> DecodeValues | None:
    r, q, t, u, a, p, rep = order
    accept = float(m[a]) if a else None
    if accept is not None and not 0.0 <= accept <= sglang.MAX_ACCEPT_LEN:
        return None  # let the general parser report it
    repeated = m[rep]
    return (
        int(m[r]),
        int(m[q]),
        float(m[t]),
        float(m[u]) if u else None,
        accept,
        float(m[p]) if p else None,
        int(repeated) if repeated else 0,
    )


class PrefillShapes:
    """Learned Prefill layouts: in one-shot mode a valid Prefill line is only counted."""

    __slots__ = ("_limit", "_shapes")

    def __init__(self, limit: int = 8) -> None:
        self._shapes: list[tuple[re.Pattern[str], re.Pattern[str]]] = []
        self._limit = limit

    def __len__(self) -> int:
        return len(self._shapes)

    def match(self, body: str) -> bool:
        return any(rx.fullmatch(body) is not None for rx, _ in self._shapes)

    @property
    def bulk_pattern(self) -> str | None:
        """The regex ``bulk`` validates with (None: none learned yet)."""
        return self._shapes[0][1].pattern if self._shapes else None

    def given(self, found: tuple[str, bool]) -> bool | None:
        """``bulk``'s answer found elsewhere (a scout) with a regex, when that is this
        layout's (None: it is not, so it says nothing here)."""
        return found[1] if self._shapes and self._shapes[0][1].pattern == found[0] else None

    def bulk(self, block: str, n: int) -> bool:
        """Whether all ``n`` newline-joined Prefill lines are valid in the first layout."""
        return bool(self._shapes) and len(self._shapes[0][1].findall(block)) == n

    def learn(self, body: str) -> None:
        shape = compile_shape(body, sglang.PREFILL_FIELDS, ())
        if shape is not None and len(self._shapes) < self._limit:
            self._shapes.append((re.compile(shape[0]), _line_regex(sglang.PREFILL, shape[0])))
