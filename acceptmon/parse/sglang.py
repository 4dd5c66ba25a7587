"""SGLang messages: Decode/Prefill batches, server args, start, stop, crash.

Each function takes the message text after its marker and the line's
``Meta`` and returns a record, or a ``ParseError`` when the line looked like
one of ours but could not be read safely. None of them raises.
"""

from __future__ import annotations

import re

from acceptmon.model import (
    OUT_OF_RANGE,
    TOO_LARGE,
    Crash,
    DecodeSample,
    Extras,
    Meta,
    ParseError,
    PositionRates,
    PrefillSample,
    ServerStart,
    SpecParamsUpdate,
)
from acceptmon.parse.fields import Damaged, Kind, Value, convert, hybrid, is_f2, loose, split_pairs
from acceptmon.parse.server_args import MAX_ARGS_CHARS, parse_args
from acceptmon.text.redact import redact_args

DECODE = "Decode batch"
PREFILL = "Prefill batch"
#: The per-position Decode line (sgl-project/sglang#31750): ``Decode batch, #window: …``.
WINDOW = ", #window: "

#: Decode fields with a first-class home, and the shape their value must have
#: (``parse_decode`` sets each on the sample by name: a new one needs its line there too).
DECODE_FIELDS: dict[str, tuple[str, Kind]] = {
    "#running-req": ("running_req", "int"),
    "#queue-req": ("queue_req", "int"),
    "gen throughput (token/s)": ("gen_throughput", "f2"),
    "token usage": ("token_usage", "f2"),
    "accept len": ("accept_len", "f2"),
    "accept rate": ("accept_rate_printed", "f2"),
    "cuda graph": ("graph", "bool"),
    "cpu graph": ("graph", "bool"),
    "npu graph": ("graph", "bool"),
    "musa graph": ("graph", "bool"),
}
_DECODE_REQUIRED = ("running_req", "queue_req", "gen_throughput")

#: Fields kept in ``extra`` whose shape is still known and checked: a damaged
#: value there betrays a damaged line as surely as one in a first-class field.
CHECKED_EXTRAS: dict[str, Kind] = {
    "full token usage": "f2",
    "swa token usage": "f2",
    "mamba usage": "f2",
    "gpu token usage": "f2",
    "cpu token usage": "f2",
    "pre-allocated usage": "f2",
    "cap len": "f2",
    "block accept len": "f2",
    "mamba num": "int",
    "largest-len": "int",
    "waiting-image-req": "int",
}

#: Prefill fields as ``DECODE_FIELDS`` (``parse_prefill`` sets each by name).
PREFILL_FIELDS: dict[str, tuple[str, Kind]] = {
    "#new-seq": ("new_seq", "int"),
    "#new-token": ("new_token", "int"),
    "#cached-token": ("cached_token", "int"),
    "#running-req": ("running_req", "int"),
    "#queue-req": ("queue_req", "int"),
    "token usage": ("token_usage", "f2"),
}
_PREFILL_REQUIRED = ("new_seq", "new_token")

#: Physically possible accept length: 1 (nothing accepted) up to a long tree path.
MAX_ACCEPT_LEN = 128.0

# Linear on any input: literal starts, bounded digit runs (``int()`` stays cheap),
# and the whitespace in front of ``[repeated`` is stripped by ``rstrip``, not a
# leading ``\s*`` (which retried at every blank of a long run: quadratic).
_REPEATED = re.compile(r"\[repeated (\d{1,9})x across cluster\]")
_MIXED = re.compile(r"\(mixed #running-req: (\d{1,18})\)")
_RATES = re.compile(r"\(per-position\): \[([0-9a-z., ]{0,4000}+)\], accept len: ([0-9]{1,9}\.[0-9]{1,9}|nan)")
_ADAPTIVE = re.compile(r"steps (\d{1,9}) -> (\d{1,9})(?: \(ema_accept_len=(\d{1,9}(?:\.\d{1,9})?)\))?")


def _header(body: str) -> tuple[str, int | None]:
    """Strip ``.``, ``,`` or `` [N],`` after the batch marker; return (rest, N)."""
    if body[:1] in ".,":
        return body[1:], None
    if body.startswith(" ["):
        num, close, rest = body[2:].partition("]")
        if close and num.isdigit() and len(num) <= 9:
            return rest.lstrip(","), int(num)
    raise Damaged("unrecognised batch header")


def _strip_repeat(body: str) -> tuple[str, int]:
    """Remove Ray's de-duplication suffix; return how many lines it stood for."""
    m = _REPEATED.search(body)
    if m is None:
        return body, 0
    return body[: m.start()].rstrip(), int(m.group(1))


def _fields(
    body: str, known: dict[str, tuple[str, Kind]]
) -> tuple[dict[str, int], dict[str, float], dict[str, bool], Extras]:
    """The body's known fields, by the type their kind gives them (ints, floats, flags), and the rest."""
    ints: dict[str, int] = {}
    floats: dict[str, float] = {}
    flags: dict[str, bool] = {}
    extra: list[tuple[str, Value]] = []
    seen: set[str] = set()
    for key, value in split_pairs(body):
        if key in seen and key:
            raise Damaged(f"field {key!r} twice")
        seen.add(key)
        spec = known.get(key)
        if spec is None:
            checked = CHECKED_EXTRAS.get(key) or ("int" if key.startswith("#") else None)
            if checked is not None and "=" not in value:
                extra.append((key, convert(key, value, checked)))
            else:
                extra.append((key, loose(value)))
            continue
        name, kind = spec
        text = value
        if "=" in value:  # 0.4.9 hybrid-SWA: token usage: full=0.10, swa=0.20
            parts = hybrid(value)
            extra.append((key, value))
            if "full" not in parts:
                continue
            text = parts["full"]
        if kind == "int":
            ints[name] = convert(key, text, kind)
        elif kind == "bool":
            flags[name] = convert(key, text, kind)
        else:
            floats[name] = convert(key, text, kind)
    return ints, floats, flags, tuple(extra)


def parse_decode(body: str, meta: Meta) -> DecodeSample | ParseError:
    try:
        body, repeated = _strip_repeat(body)
        rest, iteration = _header(body)
        ints, floats, flags, extra = _fields(rest, DECODE_FIELDS)
        try:
            running, queue, throughput = ints["running_req"], ints["queue_req"], floats["gen_throughput"]
        except KeyError:
            missing = [f for f in _DECODE_REQUIRED if f not in ints and f not in floats]
            raise Damaged(f"missing {', '.join(missing)}") from None
        accept = floats.get("accept_len")
        if accept is not None and not 0.0 <= accept <= MAX_ACCEPT_LEN:
            return ParseError(meta, "decode: accept len out of range", OUT_OF_RANGE)
        usage = floats.get("token_usage")
        if usage is None:
            pools = dict(extra)  # hybrid pools: the full-attention pool; HiSparse: the GPU pool
            full = pools.get("full token usage", pools.get("gpu token usage"))
            if isinstance(full, float):
                usage = full
    except Damaged as exc:
        return ParseError(meta, f"decode: {exc}")
    return DecodeSample(
        meta=meta,
        running_req=running,
        queue_req=queue,
        gen_throughput=throughput,
        token_usage=usage,
        accept_len=accept,
        accept_rate_printed=floats.get("accept_rate_printed"),
        graph=flags.get("graph"),
        iteration=iteration,
        repeated=repeated,
        extra=extra,
    )


def parse_prefill(body: str, meta: Meta) -> PrefillSample | ParseError:
    try:
        body, _ = _strip_repeat(body)
        mixed = _MIXED.match(body)  # match: anchored at the start
        running = None
        if mixed:
            running = int(mixed.group(1))
            body = body[mixed.end() :]
        rest, _ = _header(body)
        ints, floats, _, extra = _fields(rest, PREFILL_FIELDS)
        try:
            new_seq, new_token = ints["new_seq"], ints["new_token"]
        except KeyError:
            missing = [f for f in _PREFILL_REQUIRED if f not in ints]
            raise Damaged(f"missing {', '.join(missing)}") from None
    except Damaged as exc:
        return ParseError(meta, f"prefill: {exc}")
    return PrefillSample(
        meta=meta,
        new_seq=new_seq,
        new_token=new_token,
        cached_token=ints.get("cached_token"),
        running_req=ints.get("running_req", running),
        queue_req=ints.get("queue_req"),
        token_usage=floats.get("token_usage"),
        extra=extra,
    )


def _rates(text: str) -> tuple[tuple[float | None, ...], float | None] | None:
    m = _RATES.search(text)
    if m is None:
        return None
    rates: list[float | None] = []
    for part in m.group(1).split(","):
        v = part.strip()
        if v == "nan":
            rates.append(None)  # beyond the adaptive budget: unobserved, not rejected
        elif is_f2(v) and float(v) <= 1.0:
            rates.append(float(v))
        else:
            raise Damaged("bad per-position rate")
    length = None if m.group(2) == "nan" else float(m.group(2))
    if length is not None and not 1.0 <= length <= MAX_ACCEPT_LEN:
        raise Damaged("accept len out of range")
    return tuple(rates), length


def parse_window(body: str, meta: Meta) -> PositionRates | ParseError:
    """The text after ``Decode batch, #window: ``: per-position rates of the interval and lifetime."""
    window, _, lifetime = body.partition(" | #lifetime: ")
    try:
        now = _rates(window)
        if now is None:
            raise Damaged("no per-position rates")
        total = _rates(lifetime) if lifetime else None
    except Damaged as exc:
        return ParseError(meta, f"decode window: {exc}")
    return PositionRates(meta, now[0], now[1], *(total or ((), None)))


def parse_server_args(text: str, meta: Meta) -> ServerStart | ParseError:
    """``server_args=ServerArgs(...)``, ``server_args={...}`` or ``server_args: ...``."""
    if len(text) > MAX_ARGS_CHARS:
        return ParseError(meta, "server_args: line too large", TOO_LARGE)
    args = parse_args(text)
    if args is None:
        return ParseError(meta, "server_args: unreadable")
    return ServerStart(meta=meta, args=redact_args(args))


def parse_adaptive(text: str, meta: Meta) -> SpecParamsUpdate | ParseError:
    m = _ADAPTIVE.search(text)
    if m is None:
        return ParseError(meta, "adaptive spec params: unreadable")
    ema = float(m.group(3)) if m.group(3) else None
    return SpecParamsUpdate(meta, int(m.group(1)), int(m.group(2)), ema)


def crash(text: str, meta: Meta) -> Crash:
    return Crash(meta, text.strip()[:200])
