"""``key: value, key: value`` bodies of SGLang batch lines, validated strictly.

SGLang has moved, added and renamed fields in almost every release, so the
body is read as pairs, not by position. Known fields must have exactly the
printed shape (``:.2f`` floats, plain integers, ``True``/``False``); a value
that does not is the sign of a damaged line, and the caller drops the line
rather than risk a wrong number.
"""

from __future__ import annotations

from typing import Literal, overload

Kind = Literal["int", "f2", "float", "bool"]
Value = float | int | str | bool


class Damaged(ValueError):
    """The body cannot be read safely; the message names why."""


#: No real counter or rate has more digits; capping them keeps ``int()`` and
#: ``float()`` cheap and in range (Python refuses ints of over 4,300 digits).
MAX_DIGITS = 18


def is_int(v: str) -> bool:
    return len(v) <= MAX_DIGITS and v.isdigit() and v.isascii()


def is_f2(v: str) -> bool:
    """``<digits>.<digits>`` as printed by ``:.2f`` (also accepts more decimals)."""
    head, dot, tail = v.partition(".")
    return (
        bool(dot)
        and len(head) <= MAX_DIGITS
        and len(tail) <= MAX_DIGITS
        and head.isdigit()
        and tail.isdigit()
        and v.isascii()
    )


@overload
def convert(key: str, value: str, kind: Literal["int"]) -> int: ...
@overload
def convert(key: str, value: str, kind: Literal["bool"]) -> bool: ...
@overload
def convert(key: str, value: str, kind: Literal["f2", "float"]) -> float: ...
def convert(key: str, value: str, kind: Kind) -> int | float | bool:
    """``value`` as its ``kind`` prints it, of the type that kind gives; else ``Damaged``."""
    if kind == "int":
        if is_int(value):
            return int(value)
    elif kind == "f2":
        if is_f2(value):
            return float(value)
        if value in ("nan", "inf"):
            return float(value)
    elif kind == "bool":
        if value == "True":
            return True
        if value == "False":
            return False
    elif is_f2(value) or is_int(value):
        return float(value)
    raise Damaged(f"bad value for {key!r}")


def loose(value: str) -> Value:
    """Type an unknown field's value as best we can, never failing."""
    if is_int(value):
        return int(value)
    if is_f2(value):
        return float(value)
    if value.endswith("%") and is_f2(value[:-1]):
        return float(value[:-1])
    if value in ("True", "False"):
        return value == "True"
    return value


def split_pairs(body: str) -> list[tuple[str, str]]:
    """Split ``a: 1, b: 2`` into pairs.

    The 0.4.9 hybrid-SWA form ``#token: full=1, swa=2`` continues the previous
    value past a comma; such ``name=value`` parts are glued back onto it, and so
    is the rest of a bracket a value opened (DSPARK's ``est uncap acc len: 4.02
    [3.80, 4.24]``). A part with no ``": "`` is kept under the empty key
    (unknown free text).
    """
    body = body.strip().rstrip(",").rstrip()
    pairs: list[tuple[str, str]] = []
    for part in body.split(", "):
        if pairs and pairs[-1][1].count("[") > pairs[-1][1].count("]"):
            k, v = pairs[-1]
            pairs[-1] = (k, f"{v}, {part.strip()}")
            continue
        key, sep, value = part.partition(": ")
        if sep:
            pairs.append((key.strip(), value.strip()))
        elif "=" in part and pairs and "=" in pairs[-1][1]:
            k, v = pairs[-1]
            pairs[-1] = (k, f"{v}, {part.strip()}")
        elif part.strip():
            pairs.append(("", part.strip()))
    return pairs


def hybrid(value: str) -> dict[str, str]:
    """``full=1, swa=2`` → {'full': '1', 'swa': '2'}."""
    out = {}
    for part in value.split(", "):
        name, _, v = part.partition("=")
        out[name.strip()] = v.strip()
    return out
