"""Draft configs as the agent recorded them at each start: what the offline commands' ``--state-dir`` reads.

A past start's draft ``config.json`` read from disk today is today's file, not the one the
server loaded then; the agent snapshotted it when the run started (``codec.SnapshotStore``).
A start is matched by its log time and draft model path, so a log read offline under another
name (a copy, a rotated set) still finds what the agent recorded of it.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from typing import Any

from acceptmon.runs.codec import SnapshotStore
from acceptmon.sources.files import InputError
from acceptmon.statefiles.strict import as_time
from acceptmon.text.printable import printable

#: (started, draft model path) → [(source, draft config or None)] as recorded.
Index = dict[tuple[datetime, str], list[tuple[str, "dict[str, Any] | None"]]]


class Recorded:
    """The draft configs an agent recorded under ``state_dir``; InputError if it holds none."""

    def __init__(self, state_dir: str) -> None:
        if not os.path.isdir(state_dir):
            raise InputError(f"--state-dir {printable(state_dir)}: no such directory")
        self.index: Index = {}
        for row in SnapshotStore(state_dir).load_all():
            path = (row.get("settings") or {}).get("draft_model_path")
            if row.get("started") is None or not path:
                continue
            draft = (row.get("config") or {}).get("draft_config")
            key = (_instant(as_time(row["started"])), path)
            self.index.setdefault(key, []).append((row["source"], draft))
        if not self.index:
            raise InputError(
                f"--state-dir {printable(state_dir)}: no run snapshots with a draft model "
                "(the agent keeps them under DIR/runs/; reading them needs the agent's user)"
            )

    def draft(self, source: str, path: str, started: datetime | None) -> tuple[bool, dict[str, Any] | None]:
        """(whether the agent recorded this start, its draft config): the same source's record
        first, else one every recording source agrees on."""
        found = self.index.get((_instant(started), path)) if started is not None else None
        if not found:
            return False, None
        own = [draft for name, draft in found if name == source]
        drafts = own or [draft for _, draft in found]
        return all(d == drafts[0] for d in drafts), drafts[0]


def _instant(ts: datetime) -> datetime:
    return ts.astimezone(UTC) if ts.tzinfo is not None else ts
