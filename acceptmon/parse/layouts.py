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

from acceptmon.parse import sglang
from acceptmon.parse.fields import Kind, split_pairs

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


def _kind(key: str, fields: dict[str, tuple[str, Kind]]) -> str | None:
    spec = fields.get(key)
    if spec is not None:
        return spec[1]
    return sglang.CHECKED_EXTRAS.get(key) or ("int" if key.startswith("#") else None)


Shape = tuple[str, tuple[int | None, ...]]


def compile_shape(
    body: str, fields: dict[str, tuple[str, Kind]] = sglang.DECODE_FIELDS, wanted: tuple[str, ...] = WANTED
) -> Shape | None:
    """Build the regex for ``body``'s layout; None when it should not be cached."""
    if "=" in body or "[repeated" in body or not body.startswith((".", ",", " [")):
        return None
    rest = body.lstrip(". ,")
    if rest.startswith("["):
        rest = rest.partition("]")[2].lstrip(", ")
    parts: list[str] = []
    slot: dict[str, int] = {}
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
        if field in wanted and field not in slot:
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


class DecodeShapes:
    """Per-source cache of compiled layouts (bounded)."""

    __slots__ = ("_limit", "_shapes")

    def __init__(self, limit: int = 8) -> None:
        self._shapes: list[tuple[re.Pattern[str], re.Pattern[str], tuple[int | None, ...]]] = []
        self._limit = limit

    def __len__(self) -> int:
        return len(self._shapes)

    def match(self, body: str) -> DecodeValues | None:
        for rx, _, order in self._shapes:
            m = rx.fullmatch(body)
            if m is not None:
                return _values(m, order)
        return None

    def bulk(self, block: str, n: int) -> tuple[list[tuple[str, ...]], tuple[int | None, ...]] | None:
        """Rows of ``n`` newline-joined Decode lines if all share the first layout.

        Rows hold the body's groups; ``order`` (1-based) indexes them less one.
        """
        if not self._shapes:
            return None
        _, lines_rx, order = self._shapes[0]
        rows = lines_rx.findall(block)
        return (rows, order) if len(rows) == n else None

    def learn(self, body: str) -> None:
        shape = compile_shape(body)
        if shape is not None and len(self._shapes) < self._limit:
            pattern, order = shape
            self._shapes.append((re.compile(pattern), _line_regex(sglang.DECODE, pattern), order))


def _values(m: re.Match[str], order: tuple[int | None, ...]) -> DecodeValues | None:
    g = (None, *m.groups())
    r, q, t, u, a, p, rep = order
    accept = float(g[a]) if a else None  # type: ignore[arg-type]
    if accept is not None and not 0.0 <= accept <= sglang.MAX_ACCEPT_LEN:
        return None  # let the general parser report it
    repeated = g[rep]  # type: ignore[index]
    return (
        int(g[r]),  # type: ignore[arg-type, index]
        int(g[q]),  # type: ignore[arg-type, index]
        float(g[t]),  # type: ignore[arg-type, index]
        float(g[u]) if u else None,  # type: ignore[arg-type]
        accept,
        float(g[p]) if p else None,  # type: ignore[arg-type]
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

    def bulk(self, block: str, n: int) -> bool:
        """Whether all ``n`` newline-joined Prefill lines are valid in the first layout."""
        return bool(self._shapes) and len(self._shapes[0][1].findall(block)) == n

    def learn(self, body: str) -> None:
        shape = compile_shape(body, sglang.PREFILL_FIELDS, ())
        if shape is not None and len(self._shapes) < self._limit:
            self._shapes.append((re.compile(shape[0]), _line_regex(sglang.PREFILL, shape[0])))
