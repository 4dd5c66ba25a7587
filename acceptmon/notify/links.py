"""Links in alerts come from operator templates, so they fit any Grafana or wiki.

A template is a ``str.format`` string with named fields only; values are
URL-quoted so a source like ``gpu-3:/var/log/sglang.log`` cannot break the URL.
"""

from __future__ import annotations

import string
from datetime import datetime
from urllib.parse import quote

from acceptmon.model import Finding
from acceptmon.notify.fmt import epoch

#: Fields a link template may use.
LINK_FIELDS = ("source", "host", "rule", "severity", "key", "run_id", "model", "from_ms", "to_ms")


def template_problems(name: str, template: str) -> list[str]:
    """What is wrong with a template, phrased for ``check-config`` output."""
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(template) if f is not None]
    except ValueError as exc:
        return [f"{name}: template is not a valid format string ({exc})"]
    problems = []
    for field in fields:
        if field not in LINK_FIELDS:
            known = ", ".join("{" + f + "}" for f in LINK_FIELDS)
            problems.append(f"{name}: unknown field {{{field}}} (known: {known})")
    if not template.startswith(("https://", "http://")):
        problems.append(f"{name}: template must start with https:// or http://")
    return problems


def link_values(finding: Finding, now: float, window_s: float) -> dict[str, str]:
    """Template values; the time range spans the change and the present."""
    labels = dict(finding.labels)
    start = _epoch(finding.first_seen, now)
    end = _epoch(finding.resolved_at, now) if not finding.active else now
    values = {
        "source": finding.source,
        "host": labels.get("host", finding.source),
        "rule": finding.rule,
        "severity": finding.severity,
        "key": finding.key,
        "run_id": finding.run_id,
        "model": labels.get("model", ""),
        "from_ms": str(int((start - window_s) * 1000)),
        "to_ms": str(int((max(end, start) + window_s / 4) * 1000)),
    }
    return {k: quote(v, safe="") for k, v in values.items()}


def render_links(templates: dict[str, str], finding: Finding, now: float, window_s: float) -> dict[str, str]:
    """``{name: url}`` for every configured template that renders."""
    values = link_values(finding, now, window_s)
    out = {}
    for name, template in templates.items():
        try:
            out[name] = template.format_map(values)
        except (KeyError, ValueError, IndexError, AttributeError):
            continue  # the settings loader reports bad templates at start-up
    return out


def _epoch(ts: datetime | None, default: float) -> float:
    return epoch(ts) if ts is not None else default
