"""Grafana annotations: run starts, config changes and findings on every acceptmon dashboard.

Annotations are organisation-wide and tagged ``acceptmon``; the bundled
dashboard shows them by that tag. They go through the same delivery queue
as Slack (dedupe, retries with backoff, never blocking ingestion). Grafana
has no idempotency key, so each annotation carries a delivery tag, and a
delivery whose outcome was unknown (timeout, dropped connection, or a queued
one restored after a restart) is looked up by that tag before it is posted
again: a retry never doubles it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from acceptmon.model import Finding, Run
from acceptmon.notify.secret import Secret
from acceptmon.notify.settings import Links
from acceptmon.notify.transport import HttpTransport, Response
from acceptmon.runs.summary import describe_settings

TAG = "acceptmon"
_DELIVERY = "acceptmon-delivery:"


def _ms(ts: datetime | None) -> int | None:
    return None if ts is None else int(ts.timestamp() * 1000)


def finding_annotation(finding: Finding, _links: Links, now: float) -> dict[str, Any]:
    """A firing finding is a point at its first sighting; a resolved one a region to its end."""
    state = "firing" if finding.active else "resolved"
    start = _ms(finding.first_seen) or int(now * 1000)
    body: dict[str, Any] = {
        "time": start,
        "tags": [TAG, "finding", state, finding.rule, finding.severity, finding.source],
        "text": f"[{finding.severity.upper()}] {state}: {finding.summary}",
    }
    changed = finding.changed_keys()
    if changed:
        body["text"] += "\nchanged: " + ", ".join(changed)
    if not finding.active and finding.resolved_at is not None:
        body["timeEnd"] = max(start, _ms(finding.resolved_at) or start)
    return body


def run_annotation(run: Run) -> dict[str, Any]:
    """A run start, with the keys whose change opened it."""
    text = f"{run.source}: run {run.run_id} started ({describe_settings(run)})"
    tags = [TAG, "run", run.source]
    if run.diff:
        text += "\nconfig changed: " + ", ".join(run.diff.keys()[:20])
        tags.append("config-change")
    return {"time": _ms(run.started), "tags": tags, "text": text}


class GrafanaTransport:
    """POST /api/annotations with the API token; before re-posting an unknown outcome, look it up."""

    def __init__(self, base_url: str, token: Secret, timeout_s: float) -> None:
        url = Secret(base_url.rstrip("/") + "/api/annotations")
        self._http = HttpTransport(url, timeout_s, bearer=token)
        self._unsure: set[str] = set()

    def unsure_of(self, delivery_ids: Iterable[str]) -> None:
        """Deliveries an earlier process may have posted (a ``kill -9`` mid-POST leaves no
        answer on record): each is looked up by its tag before it is posted."""
        self._unsure.update(delivery_ids)

    def post(self, body: bytes, delivery_id: str) -> Response:
        tag = _DELIVERY + delivery_id
        if delivery_id in self._unsure:
            found = self._http.request("GET", b"", delivery_id, urlencode({"tags": tag, "limit": 1}))
            if found.status != 200:  # cannot tell: posting now might double it
                return Response(found.status, f"cannot check an earlier attempt: {found.detail}")
            if found.detail.startswith("[{"):
                self._unsure.discard(delivery_id)
                return Response(200, "already stored by an earlier attempt")
        annotation = json.loads(body)
        annotation["tags"] = [*annotation.get("tags", []), tag]
        response = self._http.post(json.dumps(annotation).encode(), delivery_id)
        if response.status is None:
            self._unsure.add(delivery_id)
        else:
            self._unsure.discard(delivery_id)
        return response
