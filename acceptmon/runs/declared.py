"""Speculative settings given by hand (the agent's ``speculative:``, ``runs --speculative``).

A log whose start line rotated away still shows acceptance; with the steps given, its
accept lengths become rates and token counts. One reading of the keys for every way in.
"""

from __future__ import annotations

from collections.abc import Mapping

from acceptmon.model import SpecConfig

#: ``speculative:`` keys, for a log whose start line acceptmon never saw (rotated away, --from-end).
SPECULATIVE_KEYS = ("num_steps", "num_draft_tokens", "topk")


def declared_spec(spec: Mapping[str, int]) -> SpecConfig | None:
    """The run settings ``speculative:`` declares (a chain drafts steps + 1 tokens), or None."""
    if not spec:
        return None
    steps, topk = spec.get("num_steps"), spec.get("topk")
    tokens = spec.get("num_draft_tokens") or (steps + 1 if steps and (topk or 1) == 1 else None)
    return SpecConfig("declared", steps, topk, tokens)


def parse_flags(items: list[str]) -> dict[str, int]:
    """``KEY=N`` items (``num_steps=3``) as ``speculative:`` would hold them; ValueError says why."""
    out: dict[str, int] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or key not in SPECULATIVE_KEYS:
            raise ValueError(
                f"--speculative {item!r}: expected KEY=N, KEY one of {', '.join(SPECULATIVE_KEYS)}"
            )
        if not value.isdigit() or not 1 <= int(value) <= 64:
            raise ValueError(f"--speculative {key}: expected a whole number from 1 to 64, got {value!r}")
        out[key] = int(value)
    return out
