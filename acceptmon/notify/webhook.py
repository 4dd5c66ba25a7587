"""A finding as plain JSON for any HTTP receiver (PagerDuty bridges, chat-ops bots).

The body is the one finding shape (``payload.finding_payload``) plus links;
``delivery_id`` is added by the queue (and sent as ``Idempotency-Key``) so a
receiver can drop a retry that raced a slow success.
"""

from __future__ import annotations

from typing import Any

from acceptmon.model import Finding
from acceptmon.notify.links import render_links
from acceptmon.notify.payload import SCHEMA_VERSION, finding_payload
from acceptmon.notify.settings import Links

__all__ = ["SCHEMA_VERSION", "build_webhook_payload"]


def build_webhook_payload(finding: Finding, links: Links, now: float) -> dict[str, Any]:
    """The finding's JSON plus its dashboard and runbook links."""
    out = finding_payload(finding)
    out["links"] = render_links(dict(links.templates), finding, now, links.window_s)
    return out
