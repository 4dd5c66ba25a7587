"""Findings as Alertmanager alerts (``POST /api/v2/alerts``), as Prometheus sends them.

For fleets without Prometheus rules: Alertmanager then groups the agents' alerts by change,
applies silences and inhibitions, and deduplicates across its HA peers. Like Prometheus, the
agent resends a firing alert every ``renotify_s`` (the ledger lets the same state through once
per window) with ``endsAt`` four resends ahead, so an agent that dies lets its alerts expire
instead of firing forever; a resolved finding is sent once with ``endsAt`` at its resolution.
The labels are the ones the Prometheus rules give the same finding, so one Alertmanager
configuration (``deploy/alertmanager/``) serves both paths.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from acceptmon.detect.cost import cost_of, cost_words
from acceptmon.model import Finding
from acceptmon.notify.fmt import num
from acceptmon.notify.links import render_links
from acceptmon.notify.secret import Secret
from acceptmon.notify.settings import Links
from acceptmon.notify.transport import Response, Transport
from acceptmon.text.change import change_label, change_lines

#: The alert names of deploy/prometheus/acceptmon.rules.yml, per detector rule.
ALERT_NAMES = {
    "acceptance_drop_after_change": "AcceptanceDropAfterChange",
    "speculation_collapsed": "SpeculationCollapsed",
    "acceptance_below_floor": "AcceptanceBelowFloor",
    "acceptance_drift": "AcceptanceDrift",
    "log_stalled": "LogStalled",
}
#: Path of the v2 API below Alertmanager's base URL.
API_PATH = "/api/v2/alerts"
#: A firing alert ends this many resend intervals after it was last sent, as Prometheus's.
RESENDS_TO_EXPIRE = 4


def alert_name(rule: str) -> str:
    """The alert name of a rule (CamelCase of an unknown one, so nothing is dropped)."""
    return ALERT_NAMES.get(rule) or "".join(part.capitalize() for part in rule.split("_"))


def alert_labels(finding: Finding) -> dict[str, str]:
    """The alert's identity: what Alertmanager groups, silences and inhibits on; empty ones left out."""
    labels = {
        **dict(finding.labels),
        "alertname": alert_name(finding.rule),
        "rule": finding.rule,
        "severity": str(finding.severity),
        "source": finding.source,
        "host": finding.host,
        "engine": finding.engine,
        "change": change_label(finding.diff),
        "config_hash": finding.config_hash,
    }
    return {k: v for k, v in labels.items() if v}


def build_alert(finding: Finding, links: Links, now: float, resend_s: float) -> dict[str, Any]:
    """One postable alert, wrapped as ``{"alerts": [...]}`` for the queue (a JSON object)."""
    rendered = render_links(dict(links.templates), finding, now, links.window_s)
    starts = finding.first_seen or datetime.fromtimestamp(now, UTC)
    if finding.active:
        ends = datetime.fromtimestamp(now, UTC) + timedelta(seconds=RESENDS_TO_EXPIRE * resend_s)
    else:
        ends = max(finding.resolved_at or datetime.fromtimestamp(now, UTC), starts)
    annotations = {
        "summary": finding.summary,
        "change_detail": "; ".join(change_lines(finding.diff)),
        "accept_len": _before_after(finding),
        "cost": "" if (cost := cost_of(finding)) is None else cost_words(cost),
        "model": finding.model or "",
        "draft_model": finding.draft_model or "",
        "run_id": finding.run_id,
        "runbook_url": rendered.get("runbook", ""),
    }
    alert = {
        "labels": alert_labels(finding),
        "annotations": {k: v for k, v in annotations.items() if v},
        "startsAt": starts.isoformat(),
        "endsAt": ends.isoformat(),
        "generatorURL": rendered.get("grafana", ""),
    }
    return {"alerts": [alert], "expires_after_s": RESENDS_TO_EXPIRE * resend_s if finding.active else None}


def _before_after(finding: Finding) -> str:
    if finding.before_accept_len is None or finding.after_accept_len is None:
        return ""
    text = f"{num(finding.before_accept_len)} → {num(finding.after_accept_len)}"
    if not finding.active and finding.now_accept_len is not None:
        text += f", now {num(finding.now_accept_len)}"
    return text


def api_url(base: Secret) -> Secret:
    """Where alerts are posted: the v2 API below the configured base URL."""
    return Secret(base.reveal().rstrip("/") + API_PATH)


class AlertmanagerTransport:
    """Posts the queued ``{"alerts": [...]}`` as the bare JSON list the v2 API takes, a firing
    alert's ``endsAt`` counted from the moment it is sent: one that waited in the queue while
    Alertmanager was down must not arrive already ended."""

    def __init__(self, inner: Transport, now: Callable[[], float]) -> None:
        self._inner = inner
        self._now = now

    def post(self, body: bytes, delivery_id: str) -> Response:
        queued = json.loads(body)
        alerts, ttl = queued["alerts"], queued.get("expires_after_s")
        if isinstance(ttl, int | float):
            ends = (datetime.fromtimestamp(self._now(), UTC) + timedelta(seconds=ttl)).isoformat()
            alerts = [{**a, "endsAt": ends} for a in alerts]
        return self._inner.post(json.dumps(alerts, ensure_ascii=False).encode("utf-8"), delivery_id)
