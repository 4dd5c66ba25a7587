"""One rule for every value read back from our own state files: it is of the type it decodes to.

Checkpoints and state files are JSON we wrote, but a disk, an editor or another
version can leave any JSON value anywhere. Python's ``int()``/``float()``/``str()``
accept far too much (``"12"``, ``True``, ``NaN``, ``10**400``) and a dataclass takes
whatever it is given, so a wrong value used to surface much later: a crash at
start-up, or a 500 on every scrape. Decoders convert with ``as_int``/``as_float``/
``as_time`` and finish with ``check`` (every field of a dataclass against its declared
type, nested dataclasses too); a wrong value raises ``WrongShape`` (a ValueError that
names the field, never the value: values may be secrets), and the caller drops the
entry it was decoding with one warning.
"""

from __future__ import annotations

import dataclasses
import math
import sys
import types
from datetime import datetime
from functools import cache
from typing import Any, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

#: Larger than any real offset, count or measurement; smaller than what breaks arithmetic.
MAX = 1 << 62

T = TypeVar("T")


class WrongShape(ValueError):
    """A decoded value is not of its declared type (``where`` names it; the value is left out)."""

    def __init__(self, where: str, why: str) -> None:
        self.where, self.why = where, why
        super().__init__(f"{where}: {why}")


def as_int(raw: Any, where: str = "value", *, low: int = -MAX) -> int:
    """A JSON integer in [low, 2^62]: not a bool, a float or a string of digits."""
    if type(raw) is not int or not low <= raw <= MAX:
        raise WrongShape(where, f"not an integer in [{low}, 2^62]")
    return raw


def as_key(raw: Any, where: str = "key") -> int:
    """An integer written as a JSON object key (a string of at most 18 digits, maybe signed)."""
    if (
        not isinstance(raw, str)
        or not raw.lstrip("-").isascii()
        or not raw.lstrip("-").isdigit()
        or len(raw) > 19
    ):
        raise WrongShape(where, "not an integer key")
    return int(raw)


def as_float(raw: Any, where: str = "value") -> float:
    """A finite JSON number (an integer is a number too if it has a float; a bool is not)."""
    if not _is_float(raw):
        raise WrongShape(where, "not a finite number")
    return float(raw)


def as_bool(raw: Any, where: str = "value") -> bool:
    if type(raw) is not bool:
        raise WrongShape(where, "not true/false")
    return raw


def as_str(raw: Any, where: str = "value") -> str:
    if not isinstance(raw, str):
        raise WrongShape(where, "not a string")
    return raw


def as_time(raw: Any, where: str = "value") -> datetime:
    """An ISO time, as written (a naive one stays naive: hand-built records and older state)."""
    try:
        return datetime.fromisoformat(as_str(raw, where))
    except ValueError:
        raise WrongShape(where, "not an ISO time") from None


def check(obj: T, where: str | None = None) -> T:
    """``obj`` (a dataclass instance) if every field holds a value of its declared type."""
    cls: type = type(obj)
    where = where or cls.__name__
    for name, tp in _hints(cls):
        if not _conforms(getattr(obj, name), tp):
            raise WrongShape(f"{where}.{name}", "not of its type")
    return obj


@cache
def _hints(cls: type) -> tuple[tuple[str, Any], ...]:
    hints = get_type_hints(cls)
    return tuple((f.name, hints[f.name]) for f in dataclasses.fields(cls))


def _is_float(raw: Any) -> bool:
    if type(raw) is int:  # 10**400 has no float
        return -_FLOAT_MAX <= raw <= _FLOAT_MAX
    return type(raw) is float and math.isfinite(raw)


_FLOAT_MAX = int(sys.float_info.max)


def _conforms(value: Any, tp: Any) -> bool:
    origin, args = get_origin(tp), get_args(tp)
    if tp is Any:  # decoded from JSON: any value strict JSON can hold (no NaN, no infinity)
        return _json(value)
    if origin in (Union, types.UnionType):
        return any(_conforms(value, a) for a in args)
    if origin is Literal:
        return any(type(value) is type(a) and value == a for a in args)
    if origin is tuple:
        if not isinstance(value, tuple):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(_conforms(v, args[0]) for v in value)
        return len(value) == len(args) and all(map(_conforms, value, args))
    if origin in (dict, list):
        return isinstance(value, origin) and _items_conform(value, args)
    if tp is type(None):
        return value is None
    if tp is bool:
        return type(value) is bool
    if tp is int:
        return type(value) is int and -MAX <= value <= MAX
    if tp is float:
        return _is_float(value)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return isinstance(value, tp) and _fields_conform(value)
    return isinstance(tp, type) and isinstance(value, tp)


def plain(value: Any) -> Any:
    """``value`` (parsed from a config file) as strict JSON can hold it, so that it reads back
    by the rule above: a non-finite float becomes its name (as ``parse.server_args`` does), a
    YAML date or other non-JSON value its ``str``, a non-string key its ``str``."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if value is None or isinstance(value, str | int | float):
        return value
    return str(value)


def _json(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(map(_json, value))
    if isinstance(value, dict):
        return all(isinstance(k, str) and _json(v) for k, v in value.items())
    return value is None or isinstance(value, (str, int))


def _items_conform(value: dict[Any, Any] | list[Any], args: tuple[Any, ...]) -> bool:
    if isinstance(value, dict):
        return all(_conforms(k, args[0]) and _conforms(v, args[1]) for k, v in value.items())
    return all(_conforms(v, args[0]) for v in value)


def _fields_conform(obj: Any) -> bool:
    try:
        check(obj)
    except WrongShape:
        return False
    return True
