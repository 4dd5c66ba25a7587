"""Numbers, times and config diffs as a tired engineer wants to read them."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

from acceptmon.model import ConfigDiff
from acceptmon.notify.blockkit import code, escape


def num(value: float | None, digits: int = 2) -> str:
    return "n/a" if value is None or not math.isfinite(value) else f"{value:.{digits}f}"


def pct(value: float | None) -> str:
    """A 0-1 rate as a percentage."""
    return "n/a" if value is None or not math.isfinite(value) else f"{value * 100:.1f}%"


def relative_change(before: float | None, after: float | None) -> str:
    """``(−36.1%)``, or empty when it cannot be computed."""
    if before is None or after is None or not before or not math.isfinite(before + after):
        return ""
    return f"({_signed((after - before) / before * 100, 1)}%)"


def point_change(before: float | None, after: float | None) -> str:
    """A rate change in percentage points: ``(−33.0 pp)``."""
    if before is None or after is None or not math.isfinite(before + after):
        return ""
    return f"({_signed((after - before) * 100, 1)} pp)"


def interval(ci: tuple[float, float] | None) -> str:
    return "CI n/a" if ci is None else f"CI {num(ci[0])}–{num(ci[1])}"


def p_value(p: float | None) -> str:
    if p is None or not math.isfinite(p):
        return ""
    return f"p={p:.2g}" if p >= 0.001 else "p<0.001"


def epoch(ts: datetime) -> float:
    """Seconds since the epoch; a naive timestamp is taken as UTC, never as this host's zone."""
    return (ts if ts.tzinfo is not None else ts.replace(tzinfo=UTC)).timestamp()


def slack_date(ts: datetime | None) -> str:
    """Slack shows ``<!date^…>`` in the reader's time zone; the fallback is UTC."""
    if ts is None:
        return "unknown"
    seconds = epoch(ts)
    fallback = datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"<!date^{int(seconds)}^{{date_short_pretty}} {{time}}|{fallback}>"


def duration(seconds: float) -> str:
    seconds = max(int(seconds), 0)
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes = rest // 60
    if days:
        return f"{days}d {hours}h"
    return f"{hours}h {minutes}m" if hours else f"{minutes}m"


def diff_lines(diff: ConfigDiff | None) -> list[str]:
    """One mrkdwn bullet per key: changed first (they explain the drop), then added, removed."""
    if diff is None:
        return []
    lines = [f"• {code(key, 120)}: {code(old)} → {code(new)}" for key, old, new in diff.changed]
    lines += [f"• {code(key, 120)}: _(added)_ {code(value)}" for key, value in diff.added]
    lines += [f"• {code(key, 120)}: {code(value)} → _(removed)_" for key, value in diff.removed]
    return lines


def fit_lines(lines: list[str], limit: int, max_lines: int) -> str:
    """Join as many lines as fit in ``limit`` chars, then say how many were left out."""
    shown: list[str] = []
    used = 0
    for i, line in enumerate(lines):
        more = len(lines) - i
        footer = len(f"\n…and {more} more changed keys")
        if len(shown) >= max_lines or used + len(line) + 1 + footer > limit:
            return "\n".join([*shown, f"…and {more} more changed keys"])
        shown.append(line)
        used += len(line) + 1
    return "\n".join(shown)


def plain(value: Any, limit: int) -> str:
    """Escaped single-line text for mrkdwn, clipped."""
    text = " ".join(str(value).split())
    return escape(text if len(text) <= limit else text[: limit - 1] + "…")


def _signed(value: float, digits: int) -> str:
    text = f"{abs(value):.{digits}f}"
    return f"−{text}" if value < 0 else f"+{text}"
