"""Find and read a draft model's ``config.json`` — where EAGLE-3's layer ids live.

``speculative_draft_model_path`` is either a directory or a Hugging Face
repo id; for the latter the local HF cache is searched (newest snapshot),
as SGLang itself would have loaded it from there.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from acceptmon.redact import redact_text

log = logging.getLogger("acceptmon.runs.draft_config")

MAX_CONFIG_BYTES = 1 << 20

#: Reads a file's bytes (locally, or over an SSH connection); None if absent.
FileReader = Callable[[str], "bytes | None"]


def candidates(draft_path: str) -> list[str]:
    """Where the config may be, most likely first."""
    out = [draft_path.rstrip("/") + "/config.json"]
    if draft_path.endswith(".json"):
        out.insert(0, draft_path)
    if "/" in draft_path and not draft_path.startswith(("/", ".", "~")):
        org, _, name = draft_path.partition("/")
        hub = os.environ.get("HF_HUB_CACHE") or os.path.join(
            os.environ.get("HF_HOME", os.path.expanduser("~/.cache/huggingface")), "hub"
        )
        snapshots = Path(hub) / f"models--{org}--{name.replace('/', '--')}" / "snapshots"
        if snapshots.is_dir():
            found = sorted(snapshots.glob("*/config.json"), key=lambda p: p.stat().st_mtime, reverse=True)
            out += [str(p) for p in found]
    return out


def read_local(path: str) -> bytes | None:
    try:
        with open(os.path.expanduser(path), "rb") as f:
            return f.read(MAX_CONFIG_BYTES)
    except OSError:
        return None


def read_draft_config(draft_path: str, reader: FileReader = read_local) -> dict[str, Any] | None:
    """The parsed config.json, or None (logged) when it cannot be found or read."""
    for path in candidates(draft_path):
        data = reader(path)
        if data is None:
            continue
        try:
            parsed = json.loads(data)
        except ValueError as exc:
            log.warning("draft config %s is not valid JSON (%s); snapshot has no draft config", path, exc)
            return None
        return parsed if isinstance(parsed, dict) else None
    log.info("no config.json found for draft model %s; snapshot has no draft config", redact_text(draft_path))
    return None
