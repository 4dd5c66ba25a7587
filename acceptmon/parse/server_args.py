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
    return parse_mapping(rest)


def parse_mapping(text: str) -> dict[str, Any] | None:
    """A dict repr or a ``Name(key=value, …)`` repr → a dict (None when unreadable or empty)."""
    rest = text.strip()
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


def parse_pairs(text: str) -> dict[str, Any] | None:
    """``a='x', b=5, c=Cfg(d=2), e=org/model)``: vLLM v0's engine config line, whose ``%s``
    values are not all Python (``served_model_name=org/model``, ``dtype=torch.bfloat16``).

    Split at ``", "`` outside quotes and brackets where a ``key=`` follows; a value that is a
    literal or a ``Name(k=v)`` repr is converted as in ``parse_args``, any other stays its text.
    The format's unopened closing parenthesis at the end is dropped. One pass over the text.
    """
    if len(text) > MAX_ARGS_CHARS:
        return None
    out: dict[str, Any] = {}
    for part in _top_level(text.strip()):
        key, eq, value = part.partition("=")
        key = key.strip()
        if eq and key.isidentifier():
            out[key] = _loose(value.strip())
    return out or None


def _top_level(text: str) -> list[str]:
    """``text`` cut at ``", "`` outside quotes and brackets, where a ``key=`` follows (else the
    comma belongs to the value); an unbalanced closing bracket at the very end is dropped."""
    parts: list[str] = []
    depth, quote, escaped, start = 0, "", False, 0
    n = len(text)
    for i, ch in enumerate(text):
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth < 0 and i == n - 1:
                n -= 1
        elif ch == "," and depth == 0 and text.startswith(" ", i + 1) and _key_follows(text, i + 2):
            parts.append(text[start:i])
            start = i + 2
    parts.append(text[start:n])
    return parts


def _key_follows(text: str, at: int) -> bool:
    end = text.find("=", at, at + 80)
    return end > at and text[at:end].isidentifier()


#: Node types a ``%r``/``%s`` value converts from; any other (``org/model`` parses as a
#: division) stays the text as printed.
_PRINTED = (ast.Constant, ast.Name, ast.List, ast.Tuple, ast.Set, ast.Dict, ast.UnaryOp, ast.Call)


def _loose(value: str) -> Any:
    node = _parse(value) if value else None
    return _value(node) if isinstance(node, _PRINTED) else value
