"""Detector settings: a frozen value with defaults, and the one parser of the ``detect:`` section.

acceptmon's settings loader calls ``parse_detect_settings`` once per load; the
agent uses the value it returns, so what ``check-config`` accepted is what runs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from acceptmon.model import SpecConfig
from acceptmon.text.suggest import did_you_mean, named, shown


@dataclass(frozen=True, slots=True)
class Floor:
    """A lower bound on acceptance; either part may be unset."""

    accept_len: float | None = None
    accept_rate: float | None = None

    def __bool__(self) -> bool:
        return self.accept_len is not None or self.accept_rate is not None


@dataclass(frozen=True, slots=True)
class DetectSettings:
    """Thresholds of every rule; the defaults are what bench/detect_eval.py was tuned with."""

    #: Decode intervals skipped at a run start; the skip lasts until the start-up queue has
    #: drained (#queue-req 0), but never past ``warmup_max_intervals``.
    warmup_intervals: int = 5
    warmup_max_intervals: int = 30
    #: Intervals (after warm-up, in load strata both sides share) needed before testing.
    min_before: int = 20
    min_after: int = 20
    #: One-sided Mann–Whitney significance and the minimum relative drop of the median. The
    #: drop between the 95% bounds must also reach ``min_drop_ci``: prompt-mix shifts and run
    #: to run jitter make true drops of up to ~10% at a restart with no fault, and a noisy
    #: 20-interval median must not promote one of those to a critical alert. Lowering it to
    #: 0.05 catches 10–20% drops sooner at about one false alarm per 300 server-days.
    alpha: float = 0.001
    min_drop: float = 0.10
    min_drop_ci: float = 0.10
    #: An open drop resolves once the last ``recent`` intervals are within this of the baseline.
    resolve_drop: float = 0.05
    #: A run is judged on its first ``head`` intervals: a drop a config change causes is there
    #: from the start, while a prompt-mix shift that arrives later is not the change's doing.
    head: int = 300
    #: The next run is compared with the last ``window`` intervals of a run, none older than
    #: ``baseline_s`` before its end: the closer in time, the less the workload has moved.
    window: int = 2000
    baseline_s: float | None = 1800.0
    #: ... but age is only a preference: the baseline keeps at least its last ``baseline_min``
    #: intervals however old, so a quiet server (a line every few minutes) is judged too.
    baseline_min: int = 200
    #: A restart without a config change is judged against the lowest level the previous run
    #: sustained over a block of this many intervals, not only its last window: a prompt mix
    #: that swung acceptance by ±15% there may swing it again. 0 turns this off.
    swing_block: int = 100
    recent: int = 100
    #: #running-req bucket edges: 1–3, 4–15, 16–63, 64+ by default.
    load_buckets: tuple[int, ...] = (4, 16, 64)
    min_stratum: int = 3
    collapse_max_len: float = 1.05
    collapse_intervals: int = 5
    floor: Floor = Floor()
    source_floors: tuple[tuple[str, Floor], ...] = ()
    model_floors: tuple[tuple[str, Floor], ...] = ()
    #: The floor fires when ≥ ``floor_fraction`` of the last ``floor_intervals`` are below it.
    floor_intervals: int = 10
    floor_fraction: float = 0.8
    #: CUSUM: shortfalls beyond ``drift_min_drop`` accumulate until ``drift_threshold``.
    drift_min_drop: float = 0.2
    drift_threshold: float = 4.0
    drift_ref_intervals: int = 30
    #: Seconds without a Decode line after a busy one (≥ ``stall_min_running`` or queued).
    stall_s: float = 120.0
    stall_min_running: int = 4
    #: Optional: alarm on any silence this long, busy or not (for fleets that never idle).
    silent_s: float | None = None
    #: Resolved findings kept per source so that callers see the transition.
    max_resolved: int = 20

    def floor_for(self, source: str, settings: SpecConfig) -> Floor:
        """The floor of a source, else of its target or draft model, else the default."""
        by_source = dict(self.source_floors)
        if source in by_source:
            return by_source[source]
        by_model = dict(self.model_floors)
        for model in (settings.model_path, settings.draft_model_path):
            if model is not None and model in by_model:
                return by_model[model]
        return self.floor


def parse_detect_settings(raw: object, problems: list[str], where: str = "detect") -> DetectSettings:
    """The ``detect:`` section → ``DetectSettings``; every problem is appended to ``problems``
    (then the defaults are returned: acceptmon's settings loader refuses the whole file)."""
    if not isinstance(raw, Mapping):
        problems.append(f"{where}: must be a mapping")
        return DetectSettings()
    before = len(problems)
    names = {f.name for f in fields(DetectSettings)} - {"source_floors", "model_floors"}
    known = names | {"floors"}
    problems += [
        f"{where}.{named(k)}: unknown setting{did_you_mean(k, known)}" for k in raw if k not in known
    ]
    values: dict[str, Any] = {}
    for name in names & raw.keys():
        mark = len(problems)
        value = _check(name, raw[name], f"{where}.{name}", problems)
        if len(problems) == mark:
            values[name] = value
    if "floors" in raw:
        values.update(_floors(raw["floors"], f"{where}.floors", problems))
    if len(problems) > before:
        return DetectSettings()
    settings = DetectSettings(**values)
    crossed = _cross_checks(settings, where)
    problems += crossed
    return DetectSettings() if crossed else settings


#: name → (kind, lower bound, upper bound); bounds are inclusive unless the kind says "open".
_RULES: dict[str, tuple[str, float, float]] = {
    "warmup_intervals": ("int", 0, 10_000),
    "warmup_max_intervals": ("int", 0, 100_000),
    "min_before": ("int", 2, 1_000_000),
    "min_after": ("int", 2, 1_000_000),
    "head": ("int", 2, 1_000_000),
    "window": ("int", 20, 1_000_000),
    "baseline_min": ("int", 0, 1_000_000),
    "swing_block": ("int", 0, 1_000_000),
    "recent": ("int", 5, 1_000_000),
    "min_stratum": ("int", 1, 10_000),
    "collapse_intervals": ("int", 1, 10_000),
    "floor_intervals": ("int", 1, 10_000),
    "drift_ref_intervals": ("int", 1, 100_000),
    "stall_min_running": ("int", 1, 1_000_000),
    "max_resolved": ("int", 1, 100_000),
    "alpha": ("open", 0, 1),
    "min_drop": ("open", 0, 1),
    "min_drop_ci": ("float", 0, 1),
    "resolve_drop": ("open", 0, 1),
    "drift_min_drop": ("open", 0, 1),
    "floor_fraction": ("float", 0.5, 1),
    "collapse_max_len": ("float", 1, 100),
    "drift_threshold": ("float", 0.01, 1e6),
    "stall_s": ("float", 1, 1e9),
    "silent_s": ("float?", 1, 1e9),
    "baseline_s": ("float?", 60, 1e9),
}


def _number(value: Any, integral: bool) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, int):
        return value if integral or abs(value) < 1e300 else None  # a float() of it must not overflow
    if integral:
        return None
    return value if math.isfinite(value) else None


def _check(name: str, value: Any, path: str, problems: list[str]) -> Any:
    """The validated value; on a problem, appends it (the value returned is then meaningless)."""
    if name == "load_buckets":
        return _buckets(value, path, problems)
    if name == "floor":
        return _floor(value, path, problems)
    kind, lo, hi = _RULES[name]
    if kind == "float?" and value is None:
        return None
    num = _number(value, kind == "int")
    if kind == "open":
        ok = num is not None and lo < num < hi
        want = f"a number in ({lo:g}, {hi:g})"
    else:
        ok = num is not None and lo <= num <= hi
        want = f"{'an integer' if kind == 'int' else 'a number'} in [{lo:g}, {hi:g}]"
    if not ok:
        problems.append(f"{path}: must be {want}, got {shown(value)}")
        return None
    return num if kind == "int" else float(value)


def _buckets(value: Any, path: str, problems: list[str]) -> tuple[int, ...] | None:
    items = value if isinstance(value, list | tuple) else None
    if items is None or any(_number(v, True) is None or v < 1 for v in items):
        problems.append(f"{path}: must be a list of positive integers, got {shown(value)}")
        return None
    if list(items) != sorted(set(items)):
        problems.append(f"{path}: must be strictly increasing, got {shown(value)}")
        return None
    return tuple(items)


def _floor(value: Any, path: str, problems: list[str]) -> Floor | None:
    if not isinstance(value, Mapping):
        problems.append(f"{path}: must be a mapping with accept_len and/or accept_rate")
        return None
    before = len(problems)
    keys = ("accept_len", "accept_rate")
    problems += [f"{path}.{named(k)}: unknown setting{did_you_mean(k, keys)}" for k in value if k not in keys]
    length, rate = value.get("accept_len"), value.get("accept_rate")
    if length is not None and not ((num := _number(length, False)) is not None and num >= 1):
        problems.append(f"{path}.accept_len: must be a number ≥ 1, got {shown(length)}")
    if rate is not None and not ((num := _number(rate, False)) is not None and 0 < num <= 1):
        problems.append(f"{path}.accept_rate: must be a number in (0, 1], got {shown(rate)}")
    if len(problems) > before:
        return None
    return Floor(None if length is None else float(length), None if rate is None else float(rate))


def _floors(value: Any, path: str, problems: list[str]) -> dict[str, Any]:
    """``floors: {sources: {name: floor}, models: {path: floor}}``."""
    if not isinstance(value, Mapping):
        problems.append(f"{path}: must be a mapping with 'sources' and/or 'models'")
        return {}
    keys = ("sources", "models")
    problems += [f"{path}.{named(k)}: unknown setting{did_you_mean(k, keys)}" for k in value if k not in keys]
    out: dict[str, Any] = {}
    for key, field in (("sources", "source_floors"), ("models", "model_floors")):
        table = value.get(key, {})
        if not isinstance(table, Mapping):
            problems.append(f"{path}.{key}: must be a mapping of name → floor")
            continue
        pairs = [(str(name), _floor(f, f"{path}.{key}.{named(name)}", problems)) for name, f in table.items()]
        out[field] = tuple((name, f) for name, f in pairs if f is not None)
    return out


def _cross_checks(c: DetectSettings, where: str) -> list[str]:
    checks = [
        (c.resolve_drop < c.min_drop, "resolve_drop must be below min_drop"),
        (c.min_drop_ci <= c.min_drop, "min_drop_ci must be ≤ min_drop"),
        (c.warmup_max_intervals >= c.warmup_intervals, "warmup_max_intervals must be ≥ warmup_intervals"),
        (c.min_after <= min(c.recent, c.head), "min_after must be ≤ recent and ≤ head"),
        (c.min_before <= c.window, "min_before must be ≤ window"),
        (c.baseline_min <= c.window, "baseline_min must be ≤ window"),
        (c.swing_block == 0 or c.swing_block >= c.min_after, "swing_block must be 0 or ≥ min_after"),
        (c.min_stratum <= c.min_after, "min_stratum must be ≤ min_after"),
    ]
    return [f"{where}: {message}" for ok, message in checks if not ok]
