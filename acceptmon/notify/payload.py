"""A finding as the JSON that ``/api/findings`` and ``oneshot --format findings`` print.

The nested shape is the webhook notifier's (one schema for every consumer);
flat fields on top make the common questions one key away: which keys
changed, before and after accept length, still firing or not.
"""

from __future__ import annotations

from typing import Any

from acceptmon.model import Finding
from acceptmon.notify.config import Links
from acceptmon.notify.webhook import build_webhook_payload


def finding_json(f: Finding) -> dict[str, Any]:
    out = build_webhook_payload(f, Links(), 0.0)
    out.pop("links", None)
    out.update(
        changed_keys=f.changed_keys(),
        before_accept_len=out["before"]["accept_len"],
        after_accept_len=out["after"]["accept_len"],
        before_accept_rate=out["before"]["accept_rate"],
        after_accept_rate=out["after"]["accept_rate"],
        active=f.active,
    )
    return out
