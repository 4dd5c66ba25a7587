"""The one way a pipeline is put together: run tracker (with its draft config reader), parser clock and zone.

Every command that reads logs builds its pipeline here, and the agent can too:
``zone`` may differ per source, ``draft`` is any ``DraftReader`` (saved copies,
the log's own host, the agent's snapshots), ``year_hint`` and ``ahead`` are
the live agent's when it passes them.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import UTC, datetime, tzinfo
from typing import Any

from acceptmon.ingest import Pipeline, YearHint, ZoneOf
from acceptmon.model import Chunk, SpecConfig
from acceptmon.runs import DraftReader, RunTracker
from acceptmon.runs.ahead import AheadGuard


def mtime_hint(chunk: Chunk) -> datetime | None:
    """vLLM timestamps have no year; the file's modification time supplies it."""
    try:
        return datetime.fromtimestamp(os.stat(chunk.path).st_mtime, UTC) if chunk.path else None
    except OSError:
        return None


def build_pipeline(
    zone: tzinfo | ZoneOf = UTC,
    *,
    draft: DraftReader | None = None,
    watched: Callable[[], dict[str, Any]] | None = None,
    declared: Callable[[str], SpecConfig | None] | None = None,
    year: int | None = None,
    year_hint: YearHint = mtime_hint,
    ahead: AheadGuard | None = None,
) -> Pipeline:
    """A pipeline over a new run tracker.

    ``zone``: the zone of every source's naive log times, or one per source name.
    ``draft``/``watched``/``declared``: where each run's draft config.json, watched
    files and declared speculative settings come from (``RunTracker``). ``year``
    pins the year of year-less (vLLM) times, else ``year_hint`` gives one per chunk
    (default: its file's modification time). ``ahead``: the live agent's guard
    against times ahead of the host clock.
    """
    tracker = RunTracker(draft_reader=draft, watched_reader=watched, declared=declared)
    zone_of: ZoneOf = (lambda _source: zone) if isinstance(zone, tzinfo) else zone
    return Pipeline(tracker, year_hint=year_hint, zone=zone_of, year=year, ahead=ahead)
