"""Files the config lists whose content belongs to a run's config snapshot.

They are read at each server start and checked for changes while it runs:
a change without a restart opens a new config segment, so a later drop is
still tied to the edit. The draft model's ``config.json`` is not among them:
the server reads it only at start, so an edit belongs to the next start's
snapshot. Checking is a ``stat`` per file at most once a second (watchdog
events only make the agent look sooner).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from typing import Any

import yaml

from acceptmon.statefiles.strict import plain

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
            return plain(json.loads(data))  # NaN, Infinity: their names
        if path.endswith((".yaml", ".yml")):
            return plain(yaml.safe_load(data))  # .inf, dates: strings
    except ValueError:
        pass
    return {"sha256": hashlib.sha256(data).hexdigest()}


class WatchedFiles:
    def __init__(self, paths: tuple[str, ...] | list[str] = (), min_interval: float = 1.0) -> None:
        self._extra = list(paths)
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
        return list(self._extra)

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
