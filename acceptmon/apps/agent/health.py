"""The /healthz verdict (the agent's metric families are built in ``ingest/families.py``)."""

from __future__ import annotations

import time

from acceptmon.apps.agent.web.routes import HttpError


def healthz(
    last_progress: float, pending: bool, stall_after: float, now: float | None = None
) -> tuple[str, bytes]:
    """``ok``, or 503 when lines wait and ingestion has not advanced for ``stall_after`` s.

    Takes no agent lock: a stuck ingestion holds it, and this is how it shows.
    """
    idle = (time.monotonic() if now is None else now) - last_progress
    if pending and idle > stall_after:
        raise HttpError(503, f"ingestion stalled: no progress for {idle:.0f} s while lines are pending\n")
    return "text/plain", b"ok\n"
