"""Runs to and from JSON: the tracker's state in checkpoints, snapshots on disk.

The checkpoint carries only what re-reading needs (the current and previous
run of each source); every run's full snapshot is also written once, when
the run starts, under ``<state_dir>/runs/`` so history survives restarts and
``/api/runs`` can show it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import time
from pathlib import Path
from typing import Any

from acceptmon.labels import name_bytes
from acceptmon.model import ConfigDiff, ConfigSnapshot, Run, SpecConfig
from acceptmon.statefiles import is_real_dir, private_subdir, read_private, write_private
from acceptmon.statefiles.strict import WrongShape, as_bool, as_int, as_str, as_time, check

log = logging.getLogger("acceptmon.agent")

#: Snapshots kept per source, and the oldest kept (days); history beyond is pruned.
KEEP_RUNS = 200
MAX_AGE_DAYS = 90.0


def run_to_dict(run: Run) -> dict[str, Any]:
    s = run.spec
    return {
        "source": run.source,
        "run_id": run.run_id,
        "started": run.started.isoformat() if run.started else None,
        "started_lineno": run.started_lineno,
        "previous_run_id": run.previous_run_id,
        "settings": {
            "algorithm": s.algorithm,
            "num_steps": s.num_steps,
            "eagle_topk": s.eagle_topk,
            "num_draft_tokens": s.num_draft_tokens,
            "draft_model_path": s.draft_model_path,
            "model_path": s.model_path,
            "decode_log_interval": s.decode_log_interval,
        },
        "config": None
        if run.config is None
        else {
            "hash": run.config.hash,
            "server_args": run.config.server_args,
            "draft_config": run.config.draft_config,
            "watched": run.config.watched,
            **({"runtime": run.config.runtime} if run.config.runtime else {}),
        },
        "diff": None if run.diff is None else diff_to_dict(run.diff),
        "kind": run.kind,
        "reason": run.reason,
    }


def diff_to_dict(diff: ConfigDiff) -> dict[str, Any]:
    return {
        "changed": [{"key": k, "old": a, "new": b} for k, a, b in diff.changed],
        "added": [{"key": k, "value": v} for k, v in diff.added],
        "removed": [{"key": k, "value": v} for k, v in diff.removed],
        **({"unread": list(diff.unread)} if diff.unread else {}),
    }


def diff_from_dict(d: dict[str, Any]) -> ConfigDiff:
    return ConfigDiff(
        changed=tuple((c["key"], c["old"], c["new"]) for c in d.get("changed", [])),
        added=tuple((c["key"], c["value"]) for c in d.get("added", [])),
        removed=tuple((c["key"], c["value"]) for c in d.get("removed", [])),
        unread=tuple(d.get("unread", ())),
    )


def run_from_dict(d: dict[str, Any], where: str = "Run") -> Run:
    """Every field checked against its declared type (``acceptmon.statefiles.strict``: ``WrongShape``
    naming the field if not; a missing key raises KeyError)."""
    if not isinstance(d, dict):
        raise WrongShape(where, "not an object")
    _check_settings(d.get("settings") or {}, f"{where}.settings")
    return check(_run_from_dict(d, d.get("config")), where)


#: A run's ``settings`` (``SpecConfig``'s fields) and their types, checked before SpecConfig
#: derives anything from them.
_SETTINGS: dict[str, type] = {
    "algorithm": str,
    "num_steps": int,
    "eagle_topk": int,
    "num_draft_tokens": int,
    "draft_model_path": str,
    "model_path": str,
    "decode_log_interval": int,
}


def _check_settings(raw: Any, where: str) -> None:
    if not isinstance(raw, dict):
        raise WrongShape(where, "not an object")
    for key, value in raw.items():
        kind = _SETTINGS.get(key)
        if kind is None:
            raise WrongShape(where, f"unknown key {str(key)[:40]!r}")
        if key == "decode_log_interval":
            as_int(value, f"{where}.{key}", low=1)
        elif value is not None:
            (as_int if kind is int else as_str)(value, f"{where}.{key}")


def _run_from_dict(d: dict[str, Any], cfg: Any) -> Run:
    return Run(
        source=d["source"],
        run_id=d["run_id"],
        started=as_time(d["started"], "Run.started") if d.get("started") is not None else None,
        started_lineno=as_int(d.get("started_lineno", 0), "Run.started_lineno"),
        config=None
        if cfg is None
        else ConfigSnapshot(
            server_args=cfg.get("server_args") or {},
            draft_config=cfg.get("draft_config"),
            watched=cfg.get("watched") or {},
            hash=cfg.get("hash", ""),
            runtime=cfg.get("runtime") or {},
        ),
        spec=SpecConfig(**d.get("settings") or {}),
        previous_run_id=d.get("previous_run_id"),
        diff=diff_from_dict(d["diff"]) if d.get("diff") else None,
        kind=d.get("kind") or "start",
        reason=d.get("reason") or "",
    )


def check_source_runs(raw: Any, where: str) -> None:
    """One source's part of ``RunTracker.checkpoint()``, every value checked while its runs are
    decoded (``WrongShape`` or KeyError if not): the agent takes a checkpoint whole or not at all."""
    if not isinstance(raw, dict):
        raise WrongShape(where, "not an object")
    as_int(raw["seq"], f"{where}.seq", low=0)
    for key in ("ended", "crashed"):
        if key in raw:
            as_bool(raw[key], f"{where}.{key}")
    for key in ("current", "previous"):
        if raw.get(key) is not None:
            run_from_dict(raw[key], f"{where}.{key}")


class SnapshotStore:
    """One JSON file (0600) per run under ``<state_dir>/runs/<source-digest>/``.

    Bounded: each source keeps its last ``keep_runs`` snapshots, none older
    than ``max_age_days`` (by file time: written when the run started).
    """

    def __init__(
        self,
        state_dir: str | os.PathLike[str],
        keep_runs: int = KEEP_RUNS,
        max_age_days: float = MAX_AGE_DAYS,
    ) -> None:
        self.root = Path(state_dir) / "runs"
        self.keep_runs = keep_runs
        self.max_age_s = max_age_days * 86400
        self._bad: set[Path] = set()

    def _dir(self, source: str) -> Path:
        return self.root / hashlib.sha256(name_bytes(source)).hexdigest()[:16]

    def save(self, run: Run) -> None:
        folder = private_subdir(self.root.parent, self.root.name, self._dir(run.source).name)
        write_private(folder / f"{run.run_id}.json", json.dumps(run_to_dict(run), default=repr).encode())
        self._prune_folder(folder, time.time())

    def prune(self, now: float | None = None) -> None:
        """Apply the count and age bounds to every source's snapshots (at start-up)."""
        if not is_real_dir(self.root):
            return
        for folder in self.root.iterdir():
            if is_real_dir(folder):  # never prune through a symlink planted here
                self._prune_folder(folder, time.time() if now is None else now)

    def _prune_folder(self, folder: Path, now: float) -> None:
        files = _by_run_number(folder)
        doomed = files[: max(0, len(files) - self.keep_runs)]
        for path in files[len(doomed) :]:
            try:
                if now - path.stat().st_mtime > self.max_age_s:
                    doomed.append(path)
            except OSError:
                continue
        for path in doomed:
            path.unlink(missing_ok=True)
        if doomed:
            log.info("pruned %d old run snapshots in %s", len(doomed), folder)
        if len(doomed) == len(files):
            with contextlib.suppress(OSError):
                folder.rmdir()

    def load(self, source: str, limit: int = 50) -> list[dict[str, Any]]:
        folder = self._dir(source)
        if not is_real_dir(self.root) or not is_real_dir(folder):
            return []
        return self._load_folder(folder, limit)

    def load_all(self) -> list[dict[str, Any]]:
        """Every source's kept snapshots (what the offline commands' ``--state-dir`` reads)."""
        if not is_real_dir(self.root):
            return []
        folders = sorted(f for f in self.root.iterdir() if is_real_dir(f))
        return [row for folder in folders for row in self._load_folder(folder, self.keep_runs)]

    def _load_folder(self, folder: Path, limit: int) -> list[dict[str, Any]]:
        files = _by_run_number(folder)
        out = []
        for path in files[-limit:]:
            try:
                data = json.loads(read_private(path))
                run_from_dict(data)  # every field of its type, or the file is skipped
            except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
                if path not in self._bad:  # once per file: this runs at every /api/runs/<id>
                    self._bad.add(path)
                    log.warning("run snapshot %s unusable (%s); skipped", path, type(exc).__name__)
                continue
            out.append(data)
        return out


def _by_run_number(folder: Path) -> list[Path]:
    return sorted(folder.glob("r*.json"), key=lambda p: int(p.stem[1:]) if p.stem[1:].isdigit() else 0)
