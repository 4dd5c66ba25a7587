"""Find and read a draft model's ``config.json`` — where EAGLE-3's layer ids live.

``speculative_draft_model_path`` is either a directory or a Hugging Face
repo id; for the latter the HF cache of the log's host is searched (newest
snapshot), as SGLang itself would have loaded it from there: this host's
for a local log (a source's ``hf_home`` overrides HF_HOME), the remote
host's over SFTP for an ``ssh://`` one.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from acceptmon.sources.base import MAX_CONFIG_BYTES, FileReader
from acceptmon.sources.files import InputError
from acceptmon.statefiles.strict import plain
from acceptmon.text.redact import redact_text

#: Callable[[source, draft path, started], config or None], as ``acceptmon.runs.DraftReader``.
DraftReader = Callable[[str, str, "datetime | None"], "dict[str, Any] | None"]

log = logging.getLogger("acceptmon.runs.draft_config")
#: The logger ``draft_reader`` has always warned on (it lived in ``runsview.read``).
_runs_log = logging.getLogger("acceptmon.runs")


#: The config.json files of a cache directory's snapshots, newest first (locally or over SFTP).
Snapshots = Callable[[str], list[str]]


def local_snapshots(directory: str) -> list[str]:
    snapshots = Path(directory)
    if not snapshots.is_dir():
        return []
    found = sorted(snapshots.glob("*/config.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    return [str(p) for p in found]


def local_hub(hf_home: str | None = None) -> str:
    """This host's Hugging Face hub cache: ``hf_home``/hub, else HF_HUB_CACHE, HF_HOME, ~/.cache."""
    if hf_home:
        return os.path.join(os.path.expanduser(hf_home), "hub")
    return os.environ.get("HF_HUB_CACHE") or os.path.join(
        os.environ.get("HF_HOME", os.path.expanduser("~/.cache/huggingface")), "hub"
    )


def candidates(draft_path: str, hub: str | None = None, snapshots: Snapshots = local_snapshots) -> list[str]:
    """Where the config may be, most likely first: the path itself, then (for a repo id such
    as ``org/name``) the newest snapshot in the hub cache ``hub`` (default: this host's)."""
    out = [draft_path.rstrip("/") + "/config.json"]
    if draft_path.endswith(".json"):
        out.insert(0, draft_path)
    if "/" in draft_path and not draft_path.startswith(("/", ".", "~")):
        org, _, name = draft_path.partition("/")
        cache = os.path.join(hub or local_hub(), f"models--{org}--{name.replace('/', '--')}", "snapshots")
        out += snapshots(cache)
    return out


def read_local(path: str) -> bytes | None:
    try:
        with open(os.path.expanduser(path), "rb") as f:
            return f.read(MAX_CONFIG_BYTES)
    except OSError:
        return None


def read_draft_config(
    draft_path: str, reader: FileReader = read_local, hub: str | None = None
) -> dict[str, Any] | None:
    """The parsed config.json, or None when it cannot be found or read (the caller says so)."""
    for path in candidates(draft_path, hub):
        data = reader(path)
        if data is not None:
            return parse_config(data, path)
    return None


def parse_config(data: bytes, path: str) -> dict[str, Any] | None:
    """A config.json's content; None (with a warning naming the file) when it is not a JSON object."""
    try:
        parsed = json.loads(data)
    except ValueError as exc:
        log.warning(
            "draft config %s is not valid JSON (%s); snapshot has no draft config",
            redact_text(path, harmless=True),
            exc,
        )
        return None
    return plain(parsed) if isinstance(parsed, dict) else None  # NaN, Infinity: their names


def draft_reader(
    saved: list[str], readers: dict[str, FileReader], state_dir: str | None = None
) -> DraftReader:
    """The draft config.json of each run: what the agent recorded at that start (``state_dir``,
    ``recorded.Recorded``), else saved copies (the i-th for the i-th start, the last one for
    every later start), else where server_args says it lives (on the log's own host:
    ``readers`` maps a remote source to its file reader).

    InputError (exit 2) when a saved copy cannot be read or ``state_dir`` holds no snapshots:
    a flag that silently counts for nothing would make every change invisible.

    Here rather than in ``runsview.read`` so that ``acceptmon oneshot`` need not import
    the runs view (the detector, paramiko) to start."""
    fallback = _saved_reader(saved) if saved else _host_reader(readers)
    if state_dir is None:
        return fallback
    from acceptmon.runs.recorded import Recorded

    recorded = Recorded(state_dir)

    def agents(source: str, path: str, started: datetime | None) -> dict[str, Any] | None:
        known, draft = recorded.draft(source, path, started)
        return draft if known else fallback(source, path, started)

    return agents


def _saved_reader(saved: list[str]) -> DraftReader:
    configs = []
    for path in saved:
        config = read_draft_config(path)
        if config is None:
            raise InputError(f"--draft-config {path}: cannot be read as a config.json (a JSON object)")
        configs.append(config)
    starts = [0]

    def copy(_source: str, _path: str, _started: datetime | None) -> dict[str, Any] | None:
        starts[0] += 1
        return configs[min(starts[0], len(configs)) - 1]

    return copy


def _host_reader(readers: dict[str, FileReader]) -> DraftReader:
    """Today's config.json on the log's host. A local file modified after a run started is not
    what that run loaded: that run's draft config is unknown (None), never today's."""
    missing: set[str] = set()
    newer: set[str] = set()

    def find(source: str, path: str, started: datetime | None) -> dict[str, Any] | None:
        reader = readers.get(source)
        if reader is not None:  # over SFTP: no modification time to judge by
            found = read_draft_config(path, reader)
        else:
            found, modified = _local_as_of(path, started)
            if modified is not None:
                if path not in newer:
                    newer.add(path)
                    _runs_log.warning(
                        "draft model %s: config.json was modified at %s, after runs that started "
                        "before it: what they loaded cannot be known (--state-dir reads what an "
                        "agent recorded at each start, --draft-config saved copies)",
                        redact_text(path, harmless=True),
                        modified.isoformat(timespec="seconds"),
                    )
                return None
        if found is None and path not in missing:
            missing.add(path)
            _runs_log.warning(
                "draft model %s: no config.json here; changes inside it cannot be seen "
                "(--draft-config points at a saved copy)",
                redact_text(path, harmless=True),
            )
        return found

    return find


def _local_as_of(draft_path: str, started: datetime | None) -> tuple[dict[str, Any] | None, datetime | None]:
    """This host's config.json of ``draft_path`` and None, or (None, when it was modified) when
    that was after ``started``."""
    for path in candidates(draft_path):
        data = read_local(path)
        if data is None:
            continue
        try:
            mtime = os.stat(os.path.expanduser(path)).st_mtime
        except OSError:
            mtime = None
        if started is not None and mtime is not None and mtime > started.timestamp():
            return None, datetime.fromtimestamp(mtime, started.tzinfo)
        return parse_config(data, path), None
    return None, None
