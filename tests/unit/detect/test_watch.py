"""The per-interval state machines: persistence with hysteresis, drift CUSUM, stall reasons."""

from __future__ import annotations

import random

import pytest

from acceptmon.detect.rules import Drift, Persistence, stall_reason
from acceptmon.detect.series import Point


def _steps(p: Persistence, flags: str) -> str:
    """'x' = bad interval, '.' = good; returns F/R/- per step."""
    out = {"fire": "F", "resolve": "R", None: "-"}
    return "".join(out[p.step(c == "x")] for c in flags)


@pytest.mark.parametrize(
    ("n", "fraction", "flags", "want"),
    [
        pytest.param(5, 1.0, "xxxxx", "----F", id="collapse: five in a row"),
        pytest.param(5, 1.0, "xxxx.xxxxx", "---------F", id="one good interval restarts the count"),
        pytest.param(5, 1.0, "xxxxx....x.....", "----F---------R", id="resolves after five good in a row"),
        pytest.param(10, 0.8, "xxxxxxx.xx", "---------F", id="floor: 9 of 10"),
        pytest.param(10, 0.8, "xxxx.xxx.x", "---------F", id="floor: 8 of 10 is enough"),
        pytest.param(10, 0.8, "xxx.xxx.x.", "----------", id="floor: 7 of 10 is not"),
        pytest.param(10, 0.8, "xxxxxxx", "-------", id="floor: never before the window is full"),
        pytest.param(10, 0.8, ".x.x.x.x.x.x", "------------", id="half bad never fires"),
        pytest.param(
            10, 0.8, "xxxxxxxxxx" + "..x..x....", "---------F" + "---------R", id="resolves at ≤ 2 of 10"
        ),
    ],
)
def test_persistence(n, fraction, flags, want):
    assert _steps(Persistence(n, fraction), flags) == want


def test_persistence_carried_over_resolves_only_after_a_full_good_window():
    p = Persistence(5, 1.0, active=True)
    assert _steps(p, "....x.....") == "---------R"


def _drift(values: list[float], bucket: int = 0) -> list[tuple[int, str]]:
    d = Drift(min_drop=0.2, threshold=4.0, ref_n=30)
    return [(i, t) for i, v in enumerate(values) if (t := d.step(bucket, v)) is not None]


def _noisy(rng: random.Random, level: float, n: int) -> list[float]:
    return [round(max(1.0, rng.gauss(level, 0.25)), 2) for _ in range(n)]


def test_drift_ignores_noise_and_mix_shifts_of_eight_percent():
    rng = random.Random(1)
    values = _noisy(rng, 2.4, 200) + _noisy(rng, 2.4 * 0.92, 5000) + _noisy(rng, 2.4 * 1.08, 2000)
    assert _drift(values) == []


def test_drift_fires_on_a_sustained_slide_and_resolves_on_recovery():
    rng = random.Random(2)
    slide = [round(rng.gauss(2.4 * (1 - 0.4 * i / 300), 0.25), 2) for i in range(300)]
    values = _noisy(rng, 2.4, 300) + slide + _noisy(rng, 1.44, 200) + _noisy(rng, 2.4, 200)
    events = _drift(values)
    assert [t for _, t in events] == ["fire", "resolve"]
    fire, resolve = (i for i, _ in events)
    assert 300 < fire < 700
    assert 800 <= resolve < 900


def test_drift_compares_each_load_bucket_with_its_own_reference():
    """Busy hours have lower acceptance than quiet ones; alternating loads must not look like drift."""
    d = Drift(min_drop=0.2, threshold=4.0, ref_n=30)
    rng = random.Random(3)
    fired = []
    for i in range(4000):
        bucket = (i // 100) % 2
        level = 2.5 if bucket == 0 else 1.9  # 24% apart
        fired.append(d.step(bucket, round(rng.gauss(level, 0.2), 2)))
    assert "fire" not in fired
    assert d.reference() == pytest.approx(2.2, abs=0.1)


def _point(running: int | None, queued: int | None) -> Point:
    return Point(None, 2.0, 1.0, running, queued)


@pytest.mark.parametrize(
    ("running", "queued", "gap", "silent", "want"),
    [
        pytest.param(16, 0, 121, None, "busy", id="full batch went quiet"),
        pytest.param(1, 3, 121, None, "busy", id="queued requests went quiet"),
        pytest.param(16, 0, 119, None, "", id="not yet"),
        pytest.param(2, 0, 3600, None, "", id="a request or two left: probably idle"),
        pytest.param(None, None, 3600, None, "", id="unknown load (vLLM)"),
        pytest.param(1, 0, 3601, 3600, "silent", id="silent_s fires whatever the load"),
    ],
)
def test_stall_reason(running, queued, gap, silent, want):
    assert stall_reason(_point(running, queued), gap, 120.0, 4, silent) == want
