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

from acceptmon.statefiles import ensure_private_dir, read_private, write_private
from acceptmon.text.printable import printable

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
        raw = read_private(path)  # never through a symlink planted in its place
        # A hand-written file may hold a name's raw bytes: they are the name, as os.fsdecode reads it.
        data = json.loads(raw.decode("utf-8-sig", "surrogateescape"))
        if isinstance(data, dict):
            return _printable_names(data)
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


def _printable_names(doc: dict[str, Any]) -> dict[str, Any]:
    """Source names as this version makes them (``terminal.printable``) in a checkpoint written
    before: a non-UTF-8 byte of a file name was saved as is, and made every scrape fail. Only
    text holding such a byte changes; the exact paths inside each ``sources`` entry stay."""

    def fix(value: Any) -> Any:
        if isinstance(value, str):
            return printable(value) if _undecodable(value) else value
        if isinstance(value, list):
            return [fix(v) for v in value]
        if isinstance(value, dict):
            return {fix(k): fix(v) for k, v in value.items()}
        return value

    out = {k: fix(v) for k, v in doc.items() if k != "sources"}
    sources = doc.get("sources")
    if isinstance(sources, dict):
        out["sources"] = {fix(name): positions for name, positions in sources.items()}
    elif "sources" in doc:
        out["sources"] = sources
    return out


def _undecodable(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return True
    return False
