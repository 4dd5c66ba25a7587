"""Files whose content belongs to a run's config snapshot, checked for changes.

The draft model's ``config.json`` and any files the config lists. A change
without a server restart opens a new config segment, so a later drop is
still tied to the edit. Checking is a ``stat`` per file at most once a
second (watchdog events only make the agent look sooner).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from typing import Any

import yaml

MAX_BYTES = 1 << 20


def read_content(path: str) -> Any:
    """Parsed JSON/YAML when possible (so diffs name keys), else a digest."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES)
    except OSError as exc:
        return {"error": exc.strerror or str(exc)}
    try:
        if path.endswith(".json"):
            return json.loads(data)
        if path.endswith((".yaml", ".yml")):
            return yaml.safe_load(data)
    except ValueError:
        pass
    return {"sha256": hashlib.sha256(data).hexdigest()}


class WatchedFiles:
    def __init__(self, paths: tuple[str, ...] | list[str] = (), min_interval: float = 1.0) -> None:
        self._extra = list(paths)
        self._drafts: dict[str, str] = {}
        self._stats: dict[str, tuple[int, int] | None] = {}
        self._min_interval = min_interval
        self._next = 0.0
        for p in self._extra:
            self._stats[p] = self._stat(p)

    @staticmethod
    def _stat(path: str) -> tuple[int, int] | None:
        try:
            st = os.stat(path)
        except OSError:
            return None
        return st.st_mtime_ns, st.st_size

    def paths(self) -> list[str]:
        return [*self._extra, *self._drafts.values()]

    def follow_draft(self, source: str, draft_path: str) -> None:
        path = draft_path.rstrip("/") + "/config.json" if not draft_path.endswith(".json") else draft_path
        if os.path.exists(path) and self._drafts.get(source) != path:
            self._drafts[source] = path
            self._stats[path] = self._stat(path)

    def snapshot(self) -> dict[str, Any]:
        return {p: read_content(p) for p in self._extra}

    def changed(self) -> bool:
        """True once after any watched file's mtime or size moved."""
        now = time.monotonic()
        if now < self._next:
            return False
        self._next = now + self._min_interval
        moved = False
        for path in self.paths():
            st = self._stat(path)
            if st != self._stats.get(path):
                self._stats[path] = st
                moved = True
        return moved
