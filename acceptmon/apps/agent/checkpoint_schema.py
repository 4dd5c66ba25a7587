"""The agent's checkpoint, validated as a whole before any of it is used.

A checkpoint is valid JSON written by us, but a disk, an editor or another
version can leave one of the wrong shape. Positions and counters must be
taken or dropped together (positions without counters lose lines, counters
without positions count them twice), so one wrong value anywhere makes the
whole document unusable: ``parse`` raises ``CheckpointInvalid`` naming where,
and the agent moves the file aside and starts as on a first run.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from acceptmon.detect import persist
from acceptmon.detect.settings import DetectSettings
from acceptmon.metrics.store import ACCEPT_LEN_BUCKETS, COUNTERS, GAUGES
from acceptmon.model import PARSE_ERROR_KINDS
from acceptmon.statefiles.strict import MAX, WrongShape, as_float

VERSION = 1
#: Larger than any real offset, line number or count; smaller than what breaks arithmetic.
MAX_INT = MAX

Json = dict[str, Any]


class CheckpointInvalid(ValueError):
    """The checkpoint's shape is wrong at ``where`` (no values: they may hold secrets)."""

    def __init__(self, where: str, why: str) -> None:
        self.where = where
        super().__init__(f"{where}: {why}")


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A checkpoint whose every part has been checked."""

    sources: dict[str, Json]
    pipeline: Json
    runs: dict[str, Json]
    detector: Json
    announced_keys: frozenset[str]
    raised: dict[tuple[str, str, str], int]
    #: Per-run acceptance for /api/runs (``RunTable.checkpoint``): advisory, read leniently.
    run_stats: Json | None = None
    #: Episodes (key, first_seen) handed to notifiers (``agent.history``); None in older checkpoints.
    paged: frozenset[tuple[str, str | None]] | None = None


def parse(doc: Any, detect: DetectSettings) -> Checkpoint:
    """The typed checkpoint, or ``CheckpointInvalid``."""
    top = _obj(doc, "checkpoint", required={"version", "sources", "pipeline", "runs"})
    if type(top["version"]) is not int or top["version"] != VERSION:
        raise CheckpointInvalid("version", f"not {VERSION}")
    sources = {k: _source(v, f"sources.{k}") for k, v in _map(top["sources"], "sources").items()}
    pipeline = _obj(top["pipeline"], "pipeline", required={"store"})
    for name, stats in _map(pipeline["store"], "pipeline.store").items():
        _stats(stats, f"pipeline.store.{name}")
    runs = {k: _source_runs(v, f"runs.{k}") for k, v in _map(top["runs"], "runs").items()}
    detector = _obj(top.get("detector") or {}, "detector")
    if detector:
        _detector(detector, detect)
    keys, raised = _announced(top.get("announced") or {})
    paged = _paged((top.get("announced") or {}).get("paged"))
    stats = top.get("run_stats")
    return Checkpoint(
        sources, pipeline, runs, detector, keys, raised, stats if isinstance(stats, dict) else None, paged
    )


# -- positions ---------------------------------------------------------------------------


def _source(raw: Any, where: str) -> Json:
    d = _obj(raw, where)
    if not d:
        return d
    if "cursor" in d:  # journald
        _obj(d, where, required={"cursor"}, optional=set())
        _str(d["cursor"], f"{where}.cursor")
        return d
    if "url" in d:  # ssh
        _obj(d, where, required={"url", "files"})
        _str(d["url"], f"{where}.url")
        for path, e in _map(d["files"], f"{where}.files").items():
            _entry(e, f"{where}.files.{path}")
        return d
    _obj(d, where, required={"version", "files"})
    if type(d["version"]) is not int or d["version"] != 1:
        raise CheckpointInvalid(f"{where}.version", "not 1")
    for path, f in _map(d["files"], f"{where}.files").items():
        fw = f"{where}.files.{path}"
        fd = _obj(f, fw, required={"streams"}, optional={"done"})
        for i, e in enumerate(_list(fd["streams"], f"{fw}.streams")):
            _entry(e, f"{fw}.streams[{i}]")
        for k, v in _map(fd.get("done") or {}, f"{fw}.done").items():
            pair = _list(v, f"{fw}.done.{k}")
            if len(pair) != 2:
                raise CheckpointInvalid(f"{fw}.done.{k}", "not a [fingerprint, length] pair")
            _str(pair[0], f"{fw}.done.{k}[0]")
            _int(pair[1], f"{fw}.done.{k}[1]")
    return d


def _entry(raw: Any, where: str) -> None:
    e = _obj(
        raw,
        where,
        required={"identity", "offset", "lineno", "fingerprint", "fp_len", "real"},
        optional={"mtime_ns", "marks"},
    )
    for key in ("identity", "fingerprint", "real"):
        _str(e[key], f"{where}.{key}")
    _int(e["offset"], f"{where}.offset")
    _int(e["lineno"], f"{where}.lineno", low=1)
    _int(e["fp_len"], f"{where}.fp_len")
    if "mtime_ns" in e:
        _int(e["mtime_ns"], f"{where}.mtime_ns")
    for i, mark in enumerate(_list(e.get("marks") or [], f"{where}.marks")):
        pair = _list(mark, f"{where}.marks[{i}]")
        if len(pair) != 2:
            raise CheckpointInvalid(f"{where}.marks[{i}]", "not a [length, fingerprint] pair")
        _int(pair[0], f"{where}.marks[{i}][0]", low=1)
        _str(pair[1], f"{where}.marks[{i}][1]")


# -- counters ----------------------------------------------------------------------------


def _stats(raw: Any, where: str) -> None:
    d = _obj(
        raw,
        where,
        required={"counters", "buckets", "gauges"},
        optional={"v0_last", "error_kinds", "engine", "positions", "seen"},
    )
    if "seen" in d:
        _int(d["seen"], f"{where}.seen")
    if "engine" in d:
        _str(d["engine"], f"{where}.engine")
    for k, v in _map(d.get("error_kinds") or {}, f"{where}.error_kinds").items():
        _known(k, PARSE_ERROR_KINDS, f"{where}.error_kinds")
        _number(v, f"{where}.error_kinds.{k}", low=0.0)
    counters = _map(d["counters"], f"{where}.counters")
    for k, v in counters.items():
        _known(k, COUNTERS, f"{where}.counters")
        _number(v, f"{where}.counters.{k}", low=0.0)
    buckets = _list(d["buckets"], f"{where}.buckets")
    if len(buckets) != len(ACCEPT_LEN_BUCKETS):
        raise CheckpointInvalid(f"{where}.buckets", f"not {len(ACCEPT_LEN_BUCKETS)} buckets")
    for i, b in enumerate(buckets):
        _int(b, f"{where}.buckets[{i}]")
    for k, v in _map(d["gauges"], f"{where}.gauges").items():
        _known(k, GAUGES, f"{where}.gauges")
        if v is not None:
            _number(v, f"{where}.gauges.{k}")
    for i, v in enumerate(_list(d.get("positions") or [], f"{where}.positions")):
        _number(v, f"{where}.positions[{i}]", low=0.0)
    for k, v in _map(d.get("v0_last") or {}, f"{where}.v0_last").items():
        pair = _list(v, f"{where}.v0_last.{k}")
        if len(pair) != 2:
            raise CheckpointInvalid(f"{where}.v0_last.{k}", "not a pair")
        for i, n in enumerate(pair):
            _int(n, f"{where}.v0_last.{k}[{i}]")


# -- runs and detector -------------------------------------------------------------------

_SETTINGS: dict[str, Callable[[Any, str], object]] = {
    "algorithm": lambda v, w: _opt(v, w, _str),
    "num_steps": lambda v, w: _opt(v, w, _int),
    "eagle_topk": lambda v, w: _opt(v, w, _int),
    "num_draft_tokens": lambda v, w: _opt(v, w, _int),
    "draft_model_path": lambda v, w: _opt(v, w, _str),
    "model_path": lambda v, w: _opt(v, w, _str),
    "decode_log_interval": lambda v, w: _int(v, w, low=1),
}


def _source_runs(raw: Any, where: str) -> Json:
    d = _obj(raw, where, required={"seq"}, optional={"ended", "crashed", "current", "previous"})
    _int(d["seq"], f"{where}.seq")
    for key in ("ended", "crashed"):
        if key in d and not isinstance(d[key], bool):
            raise CheckpointInvalid(f"{where}.{key}", "not true/false")
    for key in ("current", "previous"):
        if d.get(key) is not None:
            run(d[key], f"{where}.{key}")
    return d


def run(raw: Any, where: str) -> Json:
    """Check one run as ``runstate.run_to_dict`` writes it (also used for snapshot files)."""
    d = _obj(
        raw,
        where,
        required={"source", "run_id"},
        optional={
            "started",
            "started_lineno",
            "previous_run_id",
            "settings",
            "config",
            "diff",
            "kind",
            "reason",
        },
    )
    _str(d["source"], f"{where}.source")
    _str(d["run_id"], f"{where}.run_id")
    if d.get("started") is not None:
        _str(d["started"], f"{where}.started")
        try:
            datetime.fromisoformat(d["started"])
        except ValueError:
            raise CheckpointInvalid(f"{where}.started", "not an ISO time") from None
    if "started_lineno" in d:
        _int(d["started_lineno"], f"{where}.started_lineno")
    _opt(d.get("previous_run_id"), f"{where}.previous_run_id", _str)
    _opt(d.get("kind"), f"{where}.kind", _str)
    _opt(d.get("reason"), f"{where}.reason", _str)
    for k, v in _map(d.get("settings") or {}, f"{where}.settings").items():
        _known(k, tuple(_SETTINGS), f"{where}.settings")
        _SETTINGS[k](v, f"{where}.settings.{k}")
    if d.get("config") is not None:
        c = _obj(
            d["config"],
            f"{where}.config",
            optional={"hash", "server_args", "draft_config", "watched", "runtime"},
        )
        _map(c.get("runtime") or {}, f"{where}.config.runtime")
        _str(c.get("hash", ""), f"{where}.config.hash")
        _map(c.get("server_args") or {}, f"{where}.config.server_args")
        _map(c.get("watched") or {}, f"{where}.config.watched")
        if c.get("draft_config") is not None:
            _map(c["draft_config"], f"{where}.config.draft_config")
    if d.get("diff") is not None:
        diff = _obj(d["diff"], f"{where}.diff", optional={"changed", "added", "removed"})
        shapes = {"changed": {"key", "old", "new"}, "added": {"key", "value"}, "removed": {"key", "value"}}
        for part, keys in shapes.items():
            for i, item in enumerate(_list(diff.get(part, []), f"{where}.diff.{part}")):
                _str(
                    _obj(item, f"{where}.diff.{part}[{i}]", required=keys)["key"],
                    f"{where}.diff.{part}[{i}].key",
                )
    return d


def _detector(d: Json, detect: DetectSettings) -> None:
    """The detector's state is checked by loading it into a scratch detector and saving it again."""
    try:
        persist.dump(persist.load(d, detect))
    except persist.StateError:
        return  # of another configuration: the detector starts afresh, positions stay good
    except WrongShape as exc:  # names the field, never the value
        raise CheckpointInvalid(f"detector: {exc.where}", exc.why) from None
    except Exception as exc:
        raise CheckpointInvalid("detector", f"unreadable ({type(exc).__name__})") from None


def _announced(raw: Any) -> tuple[frozenset[str], dict[tuple[str, str, str], int]]:
    d = _obj(raw, "announced", optional={"keys", "raised", "paged"})
    keys = frozenset(_str(k, "announced.keys[]") for k in _list(d.get("keys", []), "announced.keys"))
    raised: dict[tuple[str, str, str], int] = {}
    for i, item in enumerate(_list(d.get("raised", []), "announced.raised")):
        row = _list(item, f"announced.raised[{i}]")
        if len(row) != 4:
            raise CheckpointInvalid(f"announced.raised[{i}]", "not [rule, source, severity, count]")
        rule, source, severity = (_str(v, f"announced.raised[{i}]") for v in row[:3])
        raised[(rule, source, severity)] = _int(row[3], f"announced.raised[{i}][3]")
    return keys, raised


def _paged(raw: Any) -> frozenset[tuple[str, str | None]] | None:
    """``announced.paged``: [[key, first_seen or null], …]; absent (None) in older checkpoints."""
    if raw is None:
        return None
    out: set[tuple[str, str | None]] = set()
    for i, item in enumerate(_list(raw, "announced.paged")):
        row = _list(item, f"announced.paged[{i}]")
        if len(row) != 2 or not (row[1] is None or isinstance(row[1], str)):
            raise CheckpointInvalid(f"announced.paged[{i}]", "not [key, first_seen or null]")
        out.add((_str(row[0], f"announced.paged[{i}][0]"), row[1]))
    return frozenset(out)


# -- primitives --------------------------------------------------------------------------


def _obj(raw: Any, where: str, *, required: set[str] = frozenset(), optional: set[str] | None = None) -> Json:  # type: ignore[assignment]
    if not isinstance(raw, dict) or not all(isinstance(k, str) for k in raw):
        raise CheckpointInvalid(where, "not an object")
    missing = sorted(required - raw.keys())
    if missing:
        raise CheckpointInvalid(where, f"missing {', '.join(missing)}")
    if optional is not None:
        extra = sorted(raw.keys() - required - optional)
        if extra:
            raise CheckpointInvalid(where, f"unexpected key {extra[0][:40]!r}")
    return raw


def _map(raw: Any, where: str) -> Mapping[str, Any]:
    return _obj(raw, where)


def _list(raw: Any, where: str) -> list[Any]:
    if not isinstance(raw, list):
        raise CheckpointInvalid(where, "not a list")
    return raw


def _str(raw: Any, where: str) -> str:
    if not isinstance(raw, str):
        raise CheckpointInvalid(where, "not a string")
    return raw


def _int(raw: Any, where: str, *, low: int = 0) -> int:
    if type(raw) is not int or not low <= raw <= MAX_INT:
        raise CheckpointInvalid(where, f"not an integer in [{low}, 2^62]")
    return raw


def _number(raw: Any, where: str, *, low: float = -math.inf) -> float:
    """Finite, as ``strict.as_float`` (a counter may pass 2^62: hostile lines can claim that much)."""
    try:
        value = as_float(raw, where)
    except WrongShape:
        raise CheckpointInvalid(where, "not a finite number") from None
    if value < low:
        raise CheckpointInvalid(where, f"below {low}")
    return value


def _opt(raw: Any, where: str, check: Callable[[Any, str], Any]) -> None:
    if raw is not None:
        check(raw, where)


def _known(key: str, known: tuple[str, ...], where: str) -> None:
    if key not in known:
        raise CheckpointInvalid(where, f"unknown key {key[:40]!r}")
