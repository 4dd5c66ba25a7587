"""The ``server_args`` line → a dict of real Python values, without ``eval``.

The line is a dataclass ``repr`` (``ServerArgs(a=1, ...)``, up to 0.5.18) or
a dict ``repr`` (0.5.19+), 20 KB and more. It is parsed with ``ast.parse``
and converted node by node: literals become values; anything else (enum
reprs, attribute access, calls) becomes its source text, so a new field type
in a future release degrades to a string instead of failing the line.
"""

from __future__ import annotations

import ast
import math
import re
from typing import Any

#: Refuse to parse absurd lines; a real one is under 64 KB.
MAX_ARGS_CHARS = 2 * 1024 * 1024

_ANGLE_REPR = re.compile(r"<[^<>'\"]*(?:'[^']*'[^<>'\"]*)*>")
_NAMES: dict[str, Any] = {"None": None, "True": True, "False": False, "inf": math.inf, "nan": math.nan}


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
            return node.value if not isinstance(node.value, bytes) else repr(node.value)
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
                return -inner if isinstance(node.op, ast.USub) else inner
        if isinstance(node, ast.Call) and not node.args and node.keywords:
            return {kw.arg or "**": _value(kw.value) for kw in node.keywords}
        return ast.unparse(node)
    except RecursionError:
        return "<too deep>"
