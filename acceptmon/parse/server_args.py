"""The ``server_args`` line → a dict of real Python values, without ``eval``.

The line is a dataclass ``repr`` (``ServerArgs(a=1, ...)``, up to 0.5.18) or
a dict ``repr`` (0.5.19+), 20 KB and more. It is parsed with ``ast.parse``
and converted node by node: literals become values; anything else (enum
reprs, attribute access, calls) becomes its source text, so a new field type
in a future release degrades to a string instead of failing the line.

Every value is JSON-safe, so snapshots hash, diff, checkpoint and serve
alike: str, bool, None, finite floats, ints within ±2**63, lists and dicts
with str keys. Anything else becomes a string: non-finite floats their name
(``"inf"``, ``"nan"``: equal to itself, so it is no config change at every
restart), larger ints their hex form (exact, and free of Python's 4,300-digit
limit), complex numbers, ``...`` and other expressions their source text.
Nothing is dropped.
"""

from __future__ import annotations

import ast
import math
import re
from typing import Any

#: Refuse to parse absurd lines (a counted ``too_large`` error): a real one is
#: under 64 KB, and ``ast`` needs some 200 bytes of memory per input byte.
MAX_ARGS_CHARS = 256 * 1024
#: Larger ints are kept as hex strings (bounded ints stay JSON numbers everywhere).
MAX_INT = 2**63

# Quoted parts may not hold "<" or ">": each try then stops at the next angle,
# so the substitution is linear even on a line of nested unclosed "<'".
_ANGLE_REPR = re.compile(r"<[^<>'\"]*+(?:'[^'<>]*+'[^<>'\"]*+)*+>")
_NAMES: dict[str, Any] = {"None": None, "True": True, "False": False, "inf": "inf", "nan": "nan"}


def parse_args(text: str) -> dict[str, Any] | None:
    """Return the arguments as a dict, or None when the text is not readable."""
    at = text.find("server_args")
    rest = text[at + len("server_args") :].lstrip() if at >= 0 else text
    if rest[:1] in "=:":
        rest = rest[1:].strip()
    if not rest or len(rest) > MAX_ARGS_CHARS:
        return None
    node = _parse(rest)
    if isinstance(node, ast.Call):
        return {kw.arg: _value(kw.value) for kw in node.keywords if kw.arg} or None
    if isinstance(node, ast.Dict):
        out: dict[str, Any] = {}
        for k, v in zip(node.keys, node.values, strict=True):
            if k is not None:
                out[str(_value(k))] = _value(v)
        return out or None
    return None


def _parse(text: str) -> ast.expr | None:
    for candidate in (text, _ANGLE_REPR.sub(lambda m: repr(m.group(0)), text)):
        try:
            return ast.parse(candidate, mode="eval").body
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
    return None


def _value(node: ast.expr) -> Any:
    """Convert one node; non-literals fall back to their source text."""
    try:
        if isinstance(node, ast.Constant):
            return _constant(node.value)
        if isinstance(node, ast.Name):
            return _NAMES.get(node.id, node.id)
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            return [_value(e) for e in node.elts]
        if isinstance(node, ast.Dict):
            return {
                str(_value(k)) if k is not None else "**": _value(v)
                for k, v in zip(node.keys, node.values, strict=True)
            }
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            inner = _value(node.operand)
            if isinstance(inner, int | float) and not isinstance(inner, bool):
                return _constant(-inner if isinstance(node.op, ast.USub) else inner)
            if inner in ("inf", "nan"):
                return f"-{inner}" if isinstance(node.op, ast.USub) and inner == "inf" else inner
        if isinstance(node, ast.Call) and not node.args and node.keywords:
            return {kw.arg or "**": _value(kw.value) for kw in node.keywords}
        return ast.unparse(node)
    except RecursionError:
        return "<too deep>"
    except ValueError:  # a huge decimal literal inside an expression
        return "<unreadable>"


def _constant(value: object) -> Any:
    """A literal as a JSON-safe value (see the module docstring)."""
    if value is None or isinstance(value, str | bool):
        return value
    if isinstance(value, int):
        return value if -MAX_INT <= value < MAX_INT else hex(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else ("nan" if math.isnan(value) else repr(value))
    if value is Ellipsis:
        return "..."
    return repr(value)
