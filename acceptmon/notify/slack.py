"""A finding as a Slack Block Kit message that reads at a glance.

Order follows the questions of someone woken at night: how bad and where
(header), what happened (summary), by how much (before → after with evidence),
why (the config keys that changed) and where to look next (links).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from acceptmon.detect.cost import cost_of, cost_words
from acceptmon.detect.findings import DROP, STALLED
from acceptmon.model import Finding
from acceptmon.notify import fmt
from acceptmon.notify.blockkit import (
    MAX_FIELD_TEXT,
    MAX_FIELDS,
    MAX_HEADER,
    MAX_SECTION_TEXT,
    clip,
    code,
    escape,
)
from acceptmon.notify.links import render_links
from acceptmon.notify.settings import Links

_EMOJI = {"critical": "🔴", "warning": "🟠", "info": "🔵"}
_MAX_DIFF_LINES = 20
_FALLBACK_LIMIT = 600

Block = dict[str, Any]


def build_slack_message(finding: Finding, links: Links, now: float) -> dict[str, Any]:
    """The webhook payload: firing or resolved depending on ``finding.active``."""
    urls = render_links(dict(links.templates), finding, now, links.window_s)
    if not finding.active:
        blocks = _resolved_blocks(finding, now)
    elif finding.rule == STALLED:
        blocks = _stall_blocks(finding)
    else:
        blocks = _firing_blocks(finding)
    if urls:
        blocks.append(_section(_link_line(urls)))
    blocks.append(_context(finding))
    return {"text": fallback_text(finding), "blocks": blocks}


def fallback_text(finding: Finding) -> str:
    """Notification/preview text: Slack shows this where blocks cannot render."""
    where = _where(finding)
    if not finding.active:
        text = f"[RESOLVED] {_title(finding)} on {where}"
        if finding.rule != STALLED:
            text += f": now {_acceptance(finding)}"
        return clip(escape(text), _FALLBACK_LIMIT)
    if finding.rule == STALLED:
        text = f"[{finding.severity.upper()}] {_title(finding)} on {where}: {finding.summary}"
        return clip(escape(text), _FALLBACK_LIMIT)
    change = f"accept length {fmt.num(finding.before_accept_len)} → {fmt.num(finding.after_accept_len)}"
    if finding.before_accept_len is None:
        change = f"accept length {fmt.num(finding.after_accept_len)}"
    if finding.before_per_token is not None:  # the draft's length changed: α was compared
        change = (
            f"per-token acceptance {fmt.num(finding.before_per_token)} → {fmt.num(finding.after_per_token)} "
            f"({change})"
        )
    keys = finding.changed_keys()
    cause = f" after change of {', '.join(keys[:3])}" + (f" (+{len(keys) - 3} more)" if len(keys) > 3 else "")
    text = f"[{finding.severity.upper()}] {_title(finding)} on {where}: {change}{cause if keys else ''}"
    return clip(escape(text), _FALLBACK_LIMIT)


def _acceptance(f: Finding) -> str:
    """``accept len 2.41, accept rate 47.0%``: acceptance when it resolved (RESOLVED messages)."""
    if f.now_accept_len is None and f.now_accept_rate is None:
        return "acceptance unknown"
    return f"accept len {fmt.num(f.now_accept_len)}, accept rate {fmt.pct(f.now_accept_rate)}"


def _firing_blocks(finding: Finding) -> list[Block]:
    emoji = _EMOJI.get(finding.severity, "⚪")
    blocks = [
        _header(f"{emoji} {finding.severity.upper()}: {_title(finding)} on {_where(finding)}"),
        _section(f"*{fmt.plain(finding.summary, 2800)}*"),
        {"type": "section", "fields": _metric_fields(finding)},
        {"type": "section", "fields": _identity_fields(finding)},
    ]
    lines = fmt.diff_lines(finding.diff)
    if lines:
        title = f"*Config changes* ({len(lines)} key{'s' if len(lines) != 1 else ''})\n"
        body = fmt.fit_lines(lines, MAX_SECTION_TEXT - len(title), _MAX_DIFF_LINES)
        blocks += [{"type": "divider"}, _section(title + body)]
    return blocks


def _stall_blocks(finding: Finding) -> list[Block]:
    """A silent log: how long and what was running; no acceptance numbers, no config diff."""
    emoji = _EMOJI.get(finding.severity, "⚪")
    return [
        _header(f"{emoji} {finding.severity.upper()}: {_title(finding)} on {_where(finding)}"),
        _section(f"*{fmt.plain(finding.summary, 2800)}*"),
        {"type": "section", "fields": [*_identity_fields(finding), _field("Run", code(finding.run_id, 60))]},
    ]


def _resolved_blocks(finding: Finding, now: float) -> list[Block]:
    resolved = finding.resolved_at or datetime.fromtimestamp(now, UTC)
    since = finding.first_seen
    lasted = f" after {fmt.duration(fmt.epoch(resolved) - fmt.epoch(since))}" if since else ""
    keys = finding.changed_keys()
    text = f"Resolved {fmt.slack_date(resolved)}{lasted} (firing since {fmt.slack_date(since)})."
    if finding.rule == STALLED:
        text += "\nDecode lines are being written again."
    else:
        text += f"\nAcceptance now: {_acceptance(finding)}."
        cost = cost_of(finding)
        if cost is not None:
            text += f"\nWhile it lasted it was {cost_words(cost)} (an estimate)."
    if keys:
        shown = ", ".join(code(k, 60) for k in keys[:5])
        text += f"\nConfig change: {shown}" + (f" …and {len(keys) - 5} more" if len(keys) > 5 else "")
    fields = _identity_fields(finding)
    if finding.rule != STALLED:
        fields = [
            _field("Accept length now", f"*{fmt.num(finding.now_accept_len)}*"),
            _field("Accept rate now", f"*{fmt.pct(finding.now_accept_rate)}*"),
            *fields,
        ][:MAX_FIELDS]
    return [
        _header(f"✅ RESOLVED: {_title(finding)} on {_where(finding)}"),
        _section(f"*{fmt.plain(finding.summary, 1500)}*\n{text}"),
        {"type": "section", "fields": fields},
    ]


def _metric_fields(f: Finding) -> list[Block]:
    before_len, after_len = f.before_accept_len, f.after_accept_len
    before_rate, after_rate = f.before_accept_rate, f.after_accept_rate
    baseline = f" (run {code(f.baseline_run_id, 40)})" if f.baseline_run_id else ""
    p = fmt.p_value(f.p_value)
    compared = [_field("Compared", _measure(f))] if f.rule == DROP else []
    cost = cost_of(f)
    if cost is not None:
        compared.append(_field("Cost (estimate)", fmt.plain(cost_words(cost), 400)))
    return [
        _field(
            "Accept length",
            f"{fmt.num(before_len)} → *{fmt.num(after_len)}* {fmt.relative_change(before_len, after_len)}",
        ),
        _field(
            "Accept rate",
            f"{fmt.pct(before_rate)} → *{fmt.pct(after_rate)}* {fmt.point_change(before_rate, after_rate)}",
        ),
        _field(f"Before{baseline}", f"{fmt.interval(f.before_ci)} · n={f.before_n}"),
        _field(
            f"After (run {code(f.run_id, 40)})",
            f"{fmt.interval(f.after_ci)} · n={f.after_n}" + (f" · {p}" if p else ""),
        ),
        *compared,
    ]


def _measure(f: Finding) -> str:
    """Which measure the intervals above are of, and why when it is not plain accept length."""
    if f.before_per_token is None:
        what = "accept length"
    else:
        what = (
            f"per-token acceptance α {fmt.num(f.before_per_token)} → *{fmt.num(f.after_per_token)}* "
            f"{fmt.relative_change(f.before_per_token, f.after_per_token)}"
        )
    return what + (f"\n{fmt.plain(f.measure_note, 400)}" if f.measure_note else "")


def _identity_fields(f: Finding) -> list[Block]:
    fields = [
        _field("Host / source", f"{code(f.host or '-', 100)}\n{code(f.source, 300)}"),
        _field("First seen", fmt.slack_date(f.first_seen)),
        _field("Model", code(f.model or "unknown", 200)),
        _field("Draft model", code(f.draft_model or "none", 200)),
    ]
    if f.labels:
        shown = "\n".join(f"{fmt.plain(k, 60)}: {code(v, 100)}" for k, v in f.labels[:10])
        fields.append(_field("Labels", shown))
    return fields


def _context(f: Finding) -> Block:
    text = f"rule {code(f.rule, 100)} · key {code(f.key, 200)} · sent by acceptmon"
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": text}]}


def _link_line(urls: dict[str, str]) -> str:
    icons = {"grafana": "📈 Grafana dashboard", "runbook": "📖 Runbook"}
    parts = [f"<{_link_safe(url)}|{icons.get(name, name)}>" for name, url in urls.items()]
    return "  ·  ".join(parts)


def _link_safe(url: str) -> str:
    """``|`` and ``>`` end a mrkdwn link; percent-encode them."""
    return clip(url.replace("|", "%7C").replace(">", "%3E").replace("<", "%3C"), 1400)


def _title(f: Finding) -> str:
    return f.rule.replace("_", " ").replace("-", " ")


def _where(f: Finding) -> str:
    """``gpu-7 (sglang-main)``: the machine first, then which of its logs."""
    return f"{f.host} ({f.source})" if f.host and f.host != f.source else f.source


def _header(text: str) -> Block:
    return {"type": "header", "text": {"type": "plain_text", "text": clip(text, MAX_HEADER), "emoji": True}}


def _section(text: str) -> Block:
    return {"type": "section", "text": {"type": "mrkdwn", "text": clip(text, MAX_SECTION_TEXT)}}


def _field(title: str, body: str) -> Block:
    return {"type": "mrkdwn", "text": clip(f"*{title}*\n{body}", MAX_FIELD_TEXT)}
