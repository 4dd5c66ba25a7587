"""What changed, in the few bounded, secret-free words an alert label or annotation can carry.

Alertmanager groups alerts by their labels, so the hosts that dropped after one rollout
share one notification only if the change is a label: ``change`` names the changed keys
(never their values, which may be secrets), clipped so a diff of hundreds of keys stays
one short label. The values go only into annotations, through ``change_lines``: the
``ConfigDiff`` holds them already redacted (``text/redact.py``), and each is passed
through that rule once more and clipped.
"""

from __future__ import annotations

from typing import Any

from acceptmon.model import ConfigDiff
from acceptmon.text.printable import printable
from acceptmon.text.redact import redact_text

#: Longest ``change`` label: a dozen dotted keys, far below Prometheus's and Slack's limits.
MAX_LABEL = 160
#: Keys whose values an annotation shows, and the longest value shown.
MAX_KEYS = 8
MAX_VALUE = 80


def change_label(diff: ConfigDiff | None) -> str:
    """The changed keys, ``, ``-joined in the diff's order; ``+N more`` when they do not fit."""
    keys = [_clip(redact_text(printable(k), harmless=True), MAX_LABEL) for k in (diff.keys() if diff else [])]
    shown: list[str] = []
    for i, key in enumerate(keys):
        rest = len(keys) - i
        tail = f" +{rest - 1} more" if rest > 1 else ""
        if len(", ".join([*shown, key])) + len(tail) > MAX_LABEL:
            return ", ".join(shown) + f" +{rest} more" if shown else f"+{rest} more"
        shown.append(key)
    return ", ".join(shown)


def change_lines(diff: ConfigDiff | None) -> list[str]:
    """``key: before → after`` per changed key (the first ``MAX_KEYS``), values redacted and clipped."""
    if diff is None:
        return []
    lines = [f"{_key(k)}: {_value(old)} → {_value(new)}" for k, old, new in diff.changed]
    lines += [f"{_key(k)}: (added) {_value(v)}" for k, v in diff.added]
    lines += [f"{_key(k)}: {_value(v)} → (removed)" for k, v in diff.removed]
    if len(lines) > MAX_KEYS:
        lines = [*lines[:MAX_KEYS], f"…and {len(lines) - MAX_KEYS} more changed keys"]
    return lines


def change_pairs(diff: ConfigDiff | None) -> list[tuple[str, str, str]]:
    """``(key, before, after)`` for the first ``MAX_KEYS`` keys: the labels of
    ``acceptmon_finding_change_info`` (empty string for a side that does not exist)."""
    if diff is None:
        return []
    pairs = [(_key(k), _value(old), _value(new)) for k, old, new in diff.changed]
    pairs += [(_key(k), "", _value(v)) for k, v in diff.added]
    pairs += [(_key(k), _value(v), "") for k, v in diff.removed]
    return pairs[:MAX_KEYS]


def _key(key: str) -> str:
    return _clip(redact_text(printable(key), harmless=True), MAX_VALUE)


def _value(value: Any) -> str:
    text = value if isinstance(value, str) else repr(value)
    return _clip(redact_text(printable(" ".join(text.split()))), MAX_VALUE)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
