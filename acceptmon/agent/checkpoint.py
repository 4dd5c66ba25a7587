"""The checkpoint file: positions and counters saved together, atomically.

A crash at any moment leaves either the old or the new checkpoint whole:
write a temporary file, fsync it, rename it over the old one, fsync the
directory. A checkpoint that cannot be read is moved aside and treated as
absent, so a damaged file costs a re-read, never a crash loop.
"""

from __future__ import annotations

import json
import logging
import os
import time
from typing import Any

from acceptmon.statedir import ensure_private_dir, read_private, write_private

log = logging.getLogger("acceptmon.sources")

FILENAME = "checkpoint.json"


class CheckpointWriteError(OSError):
    """Saving failed (disk full, read-only, …); the previous checkpoint is intact."""


def path_in(state_dir: str) -> str:
    return os.path.join(state_dir, FILENAME)


def save(state_dir: str, data: dict[str, Any]) -> None:
    """Replace the checkpoint with ``data`` (JSON-able) atomically and durably."""
    text = json.dumps(data, separators=(",", ":"), sort_keys=True).encode()
    try:
        ensure_private_dir(state_dir)
        write_private(path_in(state_dir), text)
    except OSError as e:
        raise CheckpointWriteError(
            e.errno, f"cannot save checkpoint in {state_dir}: {e.strerror or e}"
        ) from e


def load(state_dir: str, *, now: float | None = None) -> dict[str, Any] | None:
    """The saved checkpoint, or None if there is none or it is unreadable (then moved aside)."""
    path = path_in(state_dir)
    try:
        data = json.loads(read_private(path))  # never through a symlink planted in its place
        if isinstance(data, dict):
            return data
        reason = "not a JSON object"
    except FileNotFoundError:
        return None
    except OSError as e:  # a symlink or not a regular file: moved aside (the link, not its target)
        reason = f"cannot read it: {e.strerror}"
    except ValueError as e:
        reason = str(e)
    aside = move_aside(state_dir, "corrupt", now=now)
    if aside is None:
        log.error("corrupt checkpoint %s (%s) and cannot move it aside", path, reason)
    else:
        log.error("corrupt checkpoint moved to %s (%s); starting without it", aside, reason)
    return None


def move_aside(state_dir: str, why: str, *, now: float | None = None) -> str | None:
    """Rename the checkpoint to ``checkpoint.json.<why>-<timestamp>`` (kept for inspection)."""
    path = path_in(state_dir)
    stamp = int(time.time() if now is None else now)
    aside = f"{path}.{why}-{stamp}"
    n = 0
    while os.path.exists(aside):
        n += 1
        aside = f"{path}.{why}-{stamp}.{n}"
    try:
        os.replace(path, aside)
    except OSError as e:
        log.error("cannot move checkpoint %s aside: %s", path, e.strerror)
        return None
    return aside
