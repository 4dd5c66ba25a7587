"""The detector's state to and from JSON, so findings and baselines survive an agent restart.

The agent writes this into its checkpoint about once a second, so it is
compact: histograms as ``{bucket: {centi: count}}``, sliding windows as their
entries in order (the order decides eviction) with times delta-encoded, runs
without their config snapshot (the detector never reads it). Nothing is
approximated: a restored detector fed the same samples gives the same
findings as one that never stopped. Only what the current configuration
decides is not saved (a run's floor); windows shrunk by a new configuration
lose their oldest entries, and changed load buckets make the state useless.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import fields, replace
from datetime import datetime
from operator import add, sub
from typing import Any

from acceptmon.detect.rules import Drift, Persistence
from acceptmon.detect.series import Head, Point, Sliding, Strata
from acceptmon.detect.settings import DetectSettings
from acceptmon.detect.source import Baseline, RunData, SourceState
from acceptmon.detect.swing import Swing
from acceptmon.model import ConfigDiff, Finding, Meta, Run, SpecSample
from acceptmon.runs.codec import diff_from_dict, diff_to_dict, run_from_dict, run_to_dict
from acceptmon.statefiles import CHECKPOINT_VERSION
from acceptmon.statefiles.strict import as_bool, as_float, as_int, as_key, as_str, as_time, check

Json = dict[str, Any]


class StateError(ValueError):
    """Detector state this version cannot use (another version, other load buckets)."""


def dump(sources: Mapping[str, SourceState]) -> Json:
    return {"version": CHECKPOINT_VERSION, "sources": {name: _dump_source(s) for name, s in sources.items()}}


def load(data: Mapping[str, Any], cfg: DetectSettings) -> dict[str, SourceState]:
    """Raises StateError for state of another kind, or KeyError/TypeError/ValueError/… if corrupt
    (every value is checked against the type it decodes to: ``acceptmon.statefiles.strict``)."""
    if data.get("version") != CHECKPOINT_VERSION:
        version = str(data.get("version"))[:20]
        raise StateError(f"detector state version {version!r} is not {CHECKPOINT_VERSION}")
    return {str(name): _load_source(str(name), d, cfg) for name, d in data["sources"].items()}


# -- one source ------------------------------------------------------------------------


def _dump_source(s: SourceState) -> Json:
    bases: list[Baseline] = []  # each baseline once: the current one is usually also a drop's

    def index(b: Baseline) -> int:
        for i, seen in enumerate(bases):
            if seen is b:
                return i
        bases.append(b)
        return len(bases) - 1

    baseline = None if s.baseline is None else index(s.baseline)
    refs = [[key, index(b)] for key, b in s.refs.items()]
    return {
        "load_buckets": list(s.cfg.load_buckets),
        "book": [dump_finding(f) for f in s.book.all()],
        "current": _dump_run_data(s.current),
        "baselines": [_dump_baseline(b) for b in bases],
        "baseline": baseline,
        "refs": refs,
        "pending": [None if d is None else diff_to_dict(d) for d in s.pending],
        "last": None if s.last is None else _dump_point(s.last),
        "last_ts": _iso(s.last_ts),
        "spec_prev": [[e, p.accepted_tokens, p.drafted_tokens] for e, p in s.spec_prev.items()],
        "positions": s.positions.dump(),
    }


def _load_source(name: str, d: Mapping[str, Any], cfg: DetectSettings) -> SourceState:
    if d["load_buckets"] != list(cfg.load_buckets):  # a reload may have changed them for new sources only
        raise StateError("detector state was built with other load buckets")
    s = SourceState(name, cfg)
    s.book.load(load_finding(f) for f in d["book"])
    bases = [_load_baseline(b) for b in d["baselines"]]
    s.current = _load_run_data(d["current"], cfg)
    s.baseline = None if d["baseline"] is None else bases[as_int(d["baseline"], "baseline", low=0)]
    s.refs = {as_str(key, "refs"): bases[as_int(i, "refs", low=0)] for key, i in d["refs"]}
    s.pending = [None if p is None else diff_from_dict(p) for p in d["pending"]]
    s.last = None if d["last"] is None else _load_point(d["last"])
    s.last_ts = _time(d["last_ts"])
    s.spec_prev = {_int(e): _spec_prev(name, _int(e), _int(acc), _int(dra)) for e, acc, dra in d["spec_prev"]}
    s.positions.load(d.get("positions"))
    return s


def _spec_prev(source: str, engine: int | None, accepted: int | None, drafted: int | None) -> SpecSample:
    """Only the cumulative counts of a vLLM v0 line are read from the previous one."""
    return SpecSample(Meta(source, 0, None), None, None, accepted, drafted, cumulative=True, engine=engine)


def _dump_run_data(rd: RunData) -> Json:
    return {
        "run": _dump_run(rd.run),
        "counts": [rd.seen, rd.used, rd.tested_at, rd.checked_at],
        "warm": rd.warm,
        "decided": rd.decided,
        "slots": rd.slots,
        "steps": rd.steps,
        "floor_from": None if rd.floor_from is None else _dump_run(rd.floor_from),
        "head": _dump_strata(rd.head.strata),
        "tail": _dump_window(rd.tail),
        "recent": _dump_window(rd.recent),
        "collapse": _dump_persistence(rd.collapse),
        "floor": _dump_persistence(rd.floor),
        "drift": _dump_drift(rd.drift),
        "swing": _dump_swing(rd.swing),
    }


def _load_run_data(d: Mapping[str, Any], cfg: DetectSettings) -> RunData:
    """The floor is the current configuration's; everything else is as it was saved."""
    active = as_bool(d["collapse"]["active"], "collapse"), as_bool(d["floor"]["active"], "floor")
    rd = RunData(_load_run(d["run"]), cfg, *active)
    rd.seen, rd.used, rd.tested_at, rd.checked_at = (as_int(n, "counts") for n in d["counts"])
    rd.warm, rd.decided = as_bool(d["warm"], "warm"), as_bool(d["decided"], "decided")
    rd.slots = _int(d["slots"])
    rd.steps = _int(d.get("steps"))  # state saved before adaptive runs were followed has none
    began = d.get("floor_from")
    rd.floor_from = None if began is None else _load_run(began)
    rd.head = Head(cfg.head)
    rd.head.strata = _load_strata(d["head"])
    rd.head.n = sum(sum(h.values()) for h in rd.head.strata.values())
    rd.tail = Sliding.restored(cfg.window, cfg.baseline_s, _load_window(d["tail"]), cfg.baseline_min)
    rd.recent = Sliding.restored(cfg.recent, None, _load_window(d["recent"]))
    rd.collapse.load(_flags(d["collapse"]["flags"]))
    rd.floor.load(_flags(d["floor"]["flags"]))
    _load_drift(rd.drift, d["drift"])
    if "swing" in d:  # state saved before swings were kept has none: the run starts without
        _load_swing(rd.swing, d["swing"])
    return rd


def _dump_baseline(b: Baseline) -> Json:
    out = {"run": _dump_run(b.run), "strata": _dump_strata(b.strata), "slots": b.slots, "swing": b.swing}
    return {**out, "alpha": True} if b.alpha else out


def _load_baseline(d: Mapping[str, Any]) -> Baseline:
    slots, swing = d["slots"], as_float(d.get("swing", 1.0), "swing")  # older state has none: none seen
    if not 0.0 <= swing <= 1.0:
        raise ValueError("a baseline's swing must be in [0, 1]")
    alpha = as_bool(d.get("alpha", False), "alpha")
    return Baseline(_load_run(d["run"]), _load_strata(d["strata"]), _int(slots), swing, alpha)


def _dump_run(run: Run) -> Json:
    return run_to_dict(replace(run, config=None))


def _load_run(d: Mapping[str, Any]) -> Run:
    return run_from_dict(dict(d))


# -- windows and watchers --------------------------------------------------------------


def _dump_strata(strata: Mapping[int, Mapping[int, int]]) -> Json:
    return {str(b): {str(v): c for v, c in h.items()} for b, h in strata.items()}


def _load_strata(d: Mapping[str, Any]) -> Strata:
    strata = {as_key(b): {as_key(v): as_int(c, "strata") for v, c in h.items()} for b, h in d.items()}
    strata = {b: {v: c for v, c in h.items() if c > 0} for b, h in strata.items()}
    return {b: h for b, h in strata.items() if h}


def _dump_window(w: Sliding) -> Json:
    times, buckets, values = zip(*entries, strict=True) if (entries := w.entries()) else ((), (), ())
    out: Json = {"b": buckets, "v": values}
    if times.count(None) < len(times):
        out["t"] = encode_times(times)
    return out


def _load_window(d: Mapping[str, Any]) -> list[tuple[float | None, int, int]]:
    buckets, values = [as_int(b, "window") for b in d["b"]], [as_int(v, "window") for v in d["v"]]
    times = decode_times(d["t"]) if "t" in d else [None] * len(buckets)
    return list(zip(times, buckets, values, strict=True))


def encode_times(times: Sequence[float | None]) -> list[Any]:
    """The first time, then each as the step from the one before (log times step by a second or
    two: mostly one digit). Exact: a step that would not add back to its time is written whole,
    as ``[time]``; a missing time as null."""
    if times and None not in times:  # the usual case, at C speed: it runs every second
        steps = [times[0], *map(sub, times[1:], times[:-1])]
        if tuple(map(add, times[:-1], steps[1:])) == tuple(times[1:]):
            return list(map(int, steps)) if all(map(float.is_integer, steps)) else steps
    out: list[Any] = []
    prev: float | None = None
    for t in times:
        if t is None:
            out.append(None)
            continue
        step = t if prev is None else t - prev
        out.append(step if prev is None or prev + step == t else [t])
        prev = t
    return out


def decode_times(encoded: Sequence[Any]) -> list[float | None]:
    out: list[float | None] = []
    prev: float | None = None
    for e in encoded:
        if e is None:
            out.append(None)
            continue
        t = as_float(e[0]) if isinstance(e, list) else as_float(e) if prev is None else prev + as_float(e)
        out.append(t)
        prev = t
    return out


def _dump_swing(s: Swing) -> Json:
    ranges = {str(b): [s.lows[b], high, closed] for b, (high, closed) in s.highs.items()}
    return {"blocks": _dump_strata({b: Counter(values) for b, values in s.blocks.items()}), "ranges": ranges}


def _load_swing(s: Swing, d: Mapping[str, Any]) -> None:
    s.blocks = {b: [v for v, c in h.items() for _ in range(c)] for b, h in _load_strata(d["blocks"]).items()}
    ranges = {
        as_key(b): (as_float(low, "swing"), as_float(high, "swing"), as_int(closed, "swing"))
        for b, (low, high, closed) in d["ranges"].items()
    }
    s.lows = {b: low for b, (low, _, _) in ranges.items()}
    s.highs = {b: (high, closed) for b, (_, high, closed) in ranges.items()}


def _dump_persistence(p: Persistence) -> Json:
    return {"flags": "".join("1" if f else "0" for f in p.flags), "active": p.active}


def _flags(text: Any) -> list[bool]:
    if set(as_str(text, "flags")) - {"0", "1"}:
        raise ValueError("flags must be a string of 0 and 1")
    return [c == "1" for c in text]


def _dump_drift(d: Drift) -> Json:
    return {
        "refs": {str(b): v for b, v in d.refs.items()},
        "learning": {str(b): list(vs) for b, vs in d.learning.items()},
        "sum": d.sum,
        "level": d.level,
        "active": d.active,
    }


def _load_drift(drift: Drift, d: Mapping[str, Any]) -> None:
    refs = {as_key(b): as_float(v, "drift") for b, v in d["refs"].items()}
    learning = {as_key(b): [as_float(v, "drift") for v in vs] for b, vs in d["learning"].items()}
    drift.load(refs, learning)
    drift.sum, drift.level = as_float(d["sum"], "drift"), as_float(d["level"], "drift")
    drift.active = as_bool(d["active"], "drift")


def _dump_point(p: Point) -> list[Any]:
    return [_iso(p.ts), p.accept_len, p.weight, p.running, p.queued, p.accept_rate]


def _load_point(d: list[Any]) -> Point:
    ts, length, weight, running, queued, rate = d
    return check(Point(_time(ts), _num(length), as_float(weight), _int(running), _int(queued), _num(rate)))


# -- findings and scalars --------------------------------------------------------------


def dump_finding(f: Finding) -> Json:
    """Every field, so that a restored finding compares equal to the saved one."""
    out: Json = {}
    for field in fields(Finding):
        value = getattr(f, field.name)
        if isinstance(value, datetime):
            value = value.isoformat()
        elif isinstance(value, ConfigDiff):
            value = diff_to_dict(value)
        out[field.name] = value
    return out


def load_finding(d: Mapping[str, Any]) -> Finding:
    """Every field checked against its declared type (a wrong one raises ``WrongShape``)."""
    ci = ("before_ci", "after_ci")
    values = {k: d[k] for k in (f.name for f in fields(Finding)) if k in d}
    values.update({k: _time(d.get(k)) for k in ("first_seen", "resolved_at")})
    values.update({k: None if d.get(k) is None else tuple(d[k]) for k in ci})
    values["diff"] = None if d.get("diff") is None else diff_from_dict(d["diff"])
    values["labels"] = tuple(tuple(pair) for pair in d.get("labels", ()))
    return check(Finding(**values))


def _iso(ts: datetime | None) -> str | None:
    return None if ts is None else ts.isoformat()


def _time(value: Any) -> datetime | None:
    return None if value is None else as_time(value, "time")


def _num(value: Any) -> float | None:
    return None if value is None else as_float(value)


def _int(value: Any) -> int | None:
    return None if value is None else as_int(value)
