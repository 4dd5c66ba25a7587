"""Slack Block Kit limits, and the small text helpers that keep us inside them.

Slack rejects an over-limit message with ``400 invalid_payload`` — a permanent
error, so the alert would be lost. The builder clips everything it emits and
``validate_blocks`` re-checks a finished payload in tests and ``notify-test``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MAX_BLOCKS = 50
MAX_HEADER = 150
MAX_SECTION_TEXT = 3000
MAX_FIELDS = 10
MAX_FIELD_TEXT = 2000
MAX_CONTEXT_ELEMENTS = 10
MAX_MESSAGE_TEXT = 40000
MAX_BLOCK_ID = 255
ELLIPSIS = "…"


def clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, marked with an ellipsis."""
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + ELLIPSIS


def escape(text: str) -> str:
    """Neutralise mrkdwn control characters so values cannot ping or link."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def code(value: object, limit: int = 80) -> str:
    """An inline code span for a config value; backticks would end the span early."""
    text = clip(str(value).replace("`", "'").replace("\n", " "), limit)
    return f"`{escape(text)}`"


def validate_blocks(payload: Mapping[str, Any]) -> list[str]:
    """Every Slack limit the payload breaks; empty when Slack would accept it."""
    problems = []
    text = payload.get("text")
    if not isinstance(text, str) or not text.strip():
        problems.append("message: top-level 'text' fallback is missing or empty")
    elif len(text) > MAX_MESSAGE_TEXT:
        problems.append(f"message: text is {len(text)} chars > {MAX_MESSAGE_TEXT}")
    blocks = payload.get("blocks", [])
    if not isinstance(blocks, list):
        return [*problems, "message: 'blocks' is not a list"]
    if len(blocks) > MAX_BLOCKS:
        problems.append(f"message: {len(blocks)} blocks > {MAX_BLOCKS}")
    for i, block in enumerate(blocks):
        problems.extend(f"block {i} ({block.get('type', '?')}): {p}" for p in _block_problems(block))
    return problems


def _block_problems(block: Mapping[str, Any]) -> list[str]:
    kind = block.get("type")
    problems = []
    block_id = block.get("block_id")
    if block_id is not None and len(str(block_id)) > MAX_BLOCK_ID:
        problems.append(f"block_id longer than {MAX_BLOCK_ID}")
    if kind == "header":
        problems += _text_problems(block.get("text"), MAX_HEADER, "text", plain_only=True)
    elif kind == "section":
        problems += _section_problems(block)
    elif kind == "context":
        elements = block.get("elements") or []
        if not elements or len(elements) > MAX_CONTEXT_ELEMENTS:
            problems.append(f"needs 1..{MAX_CONTEXT_ELEMENTS} elements, has {len(elements)}")
        for j, element in enumerate(elements):
            problems += _text_problems(element, MAX_SECTION_TEXT, f"element {j}")
    elif kind != "divider":
        problems.append("unknown or unsupported block type")
    return problems


def _section_problems(block: Mapping[str, Any]) -> list[str]:
    text, fields = block.get("text"), block.get("fields")
    if text is None and not fields:
        return ["needs text or fields"]
    problems = [] if text is None else _text_problems(text, MAX_SECTION_TEXT, "text")
    if fields is not None:
        if not 0 < len(fields) <= MAX_FIELDS:
            problems.append(f"needs 1..{MAX_FIELDS} fields, has {len(fields)}")
        for j, field in enumerate(fields):
            problems += _text_problems(field, MAX_FIELD_TEXT, f"field {j}")
    return problems


def _text_problems(obj: Any, limit: int, where: str, plain_only: bool = False) -> list[str]:
    if not isinstance(obj, Mapping):
        return [f"{where}: not a text object"]
    allowed = ("plain_text",) if plain_only else ("plain_text", "mrkdwn")
    problems = []
    if obj.get("type") not in allowed:
        problems.append(f"{where}: type must be one of {', '.join(allowed)}")
    text = obj.get("text")
    if not isinstance(text, str) or not text:
        problems.append(f"{where}: text is missing or empty")
    elif len(text) > limit:
        problems.append(f"{where}: {len(text)} chars > {limit}")
    return problems
