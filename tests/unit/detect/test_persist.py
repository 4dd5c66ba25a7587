"""The detector's checkpoint: exact round trips, restarts anywhere, and bad state never fatal."""

from __future__ import annotations

import json
import logging
import random
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import pytest

from acceptmon.detect import COLLAPSED, DRIFT, DROP, FLOOR, STALLED, Detector, DetectSettings, Floor
from acceptmon.detect.persist import decode_times, dump_finding, encode_times, load_finding
from acceptmon.detect.series import Sliding
from acceptmon.model import ConfigDiff, DecodeSample, Finding, Meta, Record, Run, SpecSample
from tests.support.detect import LAYER_DIFF, REVERT_DIFF, T0, Feed, make_run


def restarted(det: Detector, config: DetectSettings | None = None, current: tuple[Run, ...] = ()) -> Detector:
    """A new detector from ``det``'s checkpoint, through JSON as the agent saves it."""
    fresh = Detector(config or det.config)
    fresh.restore(json.loads(json.dumps(det.checkpoint())), current)
    return fresh


def saved(det: Detector) -> Any:
    return json.loads(json.dumps(det.checkpoint()))


def test_an_open_drop_its_baselines_and_a_partial_run_round_trip_exactly():
    det = Detector()
    feed = Feed(det)
    (drop,) = feed.after_change(1.57, 100)
    det.observe_run_start(make_run("C", "B", ConfigDiff()))  # restarted, still bad: B is the baseline now
    feed.decode(1.57, 30)
    again = restarted(det)
    assert saved(again) == saved(det)
    assert again.status("gpu-a") == det.status("gpu-a")
    after = again.evaluate(feed.t)
    assert after == det.evaluate(feed.t)
    (f,) = after
    assert (f.key, f.first_seen, f.active, f.resolved_at) == (drop.key, drop.first_seen, True, None)
    assert (f.before_accept_len, f.after_accept_len, f.before_ci, f.p_value) == (
        drop.before_accept_len,
        drop.after_accept_len,
        drop.before_ci,
        drop.p_value,
    )
    assert f.diff == LAYER_DIFF and f.summary == drop.summary
    # the drop still resolves against run A's baseline, which only the checkpoint still has
    again.observe_run_start(make_run("D", "C", REVERT_DIFF))
    resolved = Feed(again)
    resolved.t = feed.t
    assert [(g.key, g.active) for g in resolved.decode(2.41, 40)] == [(drop.key, False)]


def test_a_finding_with_every_field_set_round_trips():
    f = Finding(
        rule=DROP,
        severity="critical",
        source="gpu-a",
        run_id="r2",
        baseline_run_id="r1",
        summary="accept len fell",
        first_seen=datetime(2025, 6, 1, 12, 0, 0, 123456),
        key="k",
        before_accept_len=2.41,
        after_accept_len=1.57,
        before_accept_rate=0.47,
        after_accept_rate=0.19,
        before_ci=(2.39, 2.43),
        after_ci=(1.5, 1.6),
        before_n=395,
        after_n=20,
        p_value=1.234e-9,
        diff=ConfigDiff(changed=(("a.b", [1, 2], [3]),), added=(("c", {"d": 1}),), removed=(("e", None),)),
        active=False,
        resolved_at=datetime(2025, 6, 1, 13, 0, 0),
        labels=(("team", "infra"),),
        measure="per_token_acceptance",
        measure_note="draft steps 5 → 3: per-token acceptance α compared",
        before_per_token=0.7,
        after_per_token=0.55,
    )
    assert load_finding(json.loads(json.dumps(dump_finding(f)))) == f


def test_a_run_s_swing_and_a_baseline_s_survive_a_restart():
    """Restored mid-run and again after the restart: the plain restart is still judged by the range."""
    det = Detector()
    feed = Feed(det, seed=8)
    det.observe_run_start(make_run("A"))
    for level in (2.5, 2.5 * 0.85, 2.5 * 1.15, 2.5 * 0.85):
        feed.decode(level, 200, sd=0.15)
    det = restarted(det)
    assert saved(det)["sources"]["gpu-a"]["current"]["swing"]["ranges"]
    feed.det = det
    feed.decode(2.5 * 1.15, 200, sd=0.15)
    det.observe_run_start(make_run("B", "A", ConfigDiff()))
    det = restarted(det)
    (base,) = saved(det)["sources"]["gpu-a"]["baselines"]
    assert 0.6 < base["swing"] < 0.8
    feed.det = det
    assert feed.decode(2.5 * 0.85, 300, sd=0.15) == []


@dataclass(frozen=True)
class Start:
    run: Run


@dataclass(frozen=True)
class Evaluate:
    now: datetime


Event = Start | Record | Evaluate


def incident() -> list[Event]:
    """Two sources through every rule: drop, floor, collapse, stall, drift, and their resolutions."""
    rng, events, counts = random.Random(3), [], [0, 0]
    t = T0

    def decode(level: float, n: int, sd: float = 0.15) -> None:
        nonlocal t
        for _ in range(n):
            t += timedelta(seconds=2)
            value = round(min(4.0, max(1.0, rng.gauss(level, sd))), 2)
            events.extend([DecodeSample(Meta("gpu-a", 0, t), 16, 0, 100.0, accept_len=value), Evaluate(t)])

    def spec(accepted: int, n: int) -> None:
        """vLLM v0: cumulative counts, so each interval needs the previous line."""
        nonlocal t
        for _ in range(n):
            t += timedelta(seconds=1)
            counts[0] += accepted + rng.randrange(-20, 21)
            counts[1] += 900
            events.append(
                SpecSample(Meta("vllm-a", 0, t), None, None, *counts, num_spec_tokens=3, cumulative=True)
            )

    events += [Start(make_run("A")), Start(make_run("A", source="vllm-a"))]
    decode(2.41, 300)
    spec(420, 120)
    events += [Start(make_run("B", "A", LAYER_DIFF)), Start(make_run("B", "A", LAYER_DIFF, source="vllm-a"))]
    decode(1.57, 120)  # drop, floor
    spec(170, 60)  # drop
    decode(1.0, 8, sd=0.0)  # collapse
    t += timedelta(minutes=5)
    events.append(Evaluate(t))  # stall
    events.append(Start(make_run("C", "B", REVERT_DIFF)))
    decode(2.41, 120)  # all of gpu-a's resolve
    decode(1.85, 160)  # above the floor, yet a drift
    return events


def replay(
    det: Detector, events: list[Event], restart_every: int = 0
) -> tuple[Detector, list[list[Finding]]]:
    out: list[list[Finding]] = []
    for i, e in enumerate(events):
        if restart_every and i % restart_every == restart_every - 1:
            det = restarted(det)
        if isinstance(e, Start):
            det.observe_run_start(e.run)
        elif isinstance(e, Evaluate):
            out.append(det.evaluate(e.now))
        else:
            det.observe(e)
    return det, out


CONFIG = DetectSettings(source_floors=(("gpu-a", Floor(accept_len=1.8)),))


def test_the_incident_exercises_every_rule():
    _, out = replay(Detector(CONFIG), incident())
    fired = {(f.rule, f.source) for found in out for f in found if f.active}
    assert fired == {(r, "gpu-a") for r in (DROP, COLLAPSED, FLOOR, STALLED, DRIFT)} | {(DROP, "vllm-a")}
    assert sorted((f.rule, f.source) for f in out[-1] if f.active) == [(DRIFT, "gpu-a"), (DROP, "vllm-a")]


@pytest.mark.parametrize("every", [7, 61, 397])
def test_restarts_anywhere_give_the_findings_of_a_detector_that_never_stopped(every: int):
    events = incident()
    straight, want = replay(Detector(CONFIG), events)
    restarted_det, got = replay(Detector(CONFIG), events, restart_every=every)
    assert got == want
    assert saved(restarted_det) == saved(straight)


@pytest.mark.parametrize(
    "state",
    [
        {"version": 99, "sources": {}},
        {"version": 1, "sources": {"gpu-a": {"book": 5}}},
        {"version": 1, "sources": []},
        {"version": 1},
        "not a mapping",
    ],
)
def test_unusable_state_starts_the_detector_afresh_and_says_so_once(state: Any, caplog):
    det = Detector()
    with caplog.at_level(logging.WARNING, logger="acceptmon.detect"):
        det.restore(state, [make_run("B", "A")])
    assert len(caplog.records) == 1 and "afresh" in caplog.records[0].getMessage()
    assert det.findings() == [] and det.status("gpu-a").run_id == "B"
    assert Feed(det).decode(2.4, 30) == []


def test_corrupt_values_deep_inside_are_caught_too(caplog):
    det = Detector()
    Feed(det).after_change(1.57, 60)
    for damage in (
        lambda s: s["current"]["counts"].pop(),
        lambda s: s["current"]["tail"].update(t=["x"] * 3),
        lambda s: s["current"]["collapse"].update(flags="0a1"),
        lambda s: s["refs"].append(["k", 9]),
        lambda s: s["book"][0].pop("key"),
    ):
        state = saved(det)
        damage(state["sources"]["gpu-a"])
        fresh = Detector()
        fresh.restore(state)
        assert fresh.findings() == []
    assert len(caplog.records) == 5


def test_other_load_buckets_make_the_state_useless(caplog):
    det = Detector()
    Feed(det).after_change(1.57, 60)
    again = restarted(det, DetectSettings(load_buckets=(2, 8, 32)))
    assert again.findings() == []
    assert "load buckets" in caplog.text


def test_smaller_windows_keep_the_newest_intervals():
    det = Detector()
    feed = Feed(det, step=0.5)
    det.observe_run_start(make_run("A"))
    feed.decode(2.4, 2500)
    again = restarted(det, DetectSettings(window=500, recent=50))
    assert again.status("gpu-a") == det.status("gpu-a")
    state = saved(again)["sources"]["gpu-a"]["current"]
    assert (len(state["tail"]["v"]), len(state["recent"]["v"])) == (500, 50)
    assert state["tail"]["v"] == saved(det)["sources"]["gpu-a"]["current"]["tail"]["v"][-500:]
    Feed(again).decode(2.4, 10)
    assert len(saved(again)["sources"]["gpu-a"]["current"]["tail"]["v"]) == 500


def test_the_tracker_s_current_run_is_followed_unless_already_followed():
    det = Detector()
    feed = Feed(det)
    det.observe_run_start(make_run("A"))
    feed.decode(2.4, 60)
    same = restarted(det, current=(make_run("A"),))
    assert same.status("gpu-a") == det.status("gpu-a")  # not restarted: its intervals are kept
    newer = restarted(det, current=(make_run("B", "A", LAYER_DIFF),))
    assert (newer.status("gpu-a").run_id, newer.status("gpu-a").baseline_run_id) == ("B", "A")
    fresh = Detector()
    fresh.restore({}, [make_run("B", "A")])
    assert (fresh.status("gpu-a").run_id, fresh.status("gpu-a").baseline_run_id) == ("B", None)


@pytest.mark.parametrize(
    "times",
    [
        [1748779200.0, 1748779201.0, 1748779203.0, 1748779203.0, 1748779202.0],
        [1748779200.123456, 1748779200.623457, 1748779201.999999],
        [None, 1748779200.5, None, 1748779201.0, 3.0, 1748779202.25],
        [0.1, 1e300, 0.3],
        [],
    ],
)
def test_window_times_round_trip_exactly(times: list[float | None]):
    encoded = json.loads(json.dumps(encode_times(times)))
    assert decode_times(encoded) == times
    assert all(type(t) is float for t in decode_times(encoded) if t is not None)


def test_whole_second_steps_are_written_as_small_integers():
    assert encode_times([1748779200.0, 1748779201.0, 1748779203.0]) == [1748779200, 1, 2]


def test_a_restored_window_is_the_saved_one_not_a_replay_of_it():
    window = Sliding(3, 10.0)
    for at, value in ((15.0, 150), (0.0, 100), (20.0, 200), (5.0, 50)):
        window.add(0, value, at)  # 15 shields 0 from age eviction until the size evicts 15
    assert [at for at, _, _ in window.entries()] == [0.0, 20.0, 5.0]
    copy = Sliding.restored(3, 10.0, window.entries())
    for at, value in ((6.0, 60), (7.0, 70), (30.0, 300)):
        assert (copy.entries(), copy.strata, copy.n) == (window.entries(), window.strata, window.n)
        window.add(1, value, at)
        copy.add(1, value, at)
    assert (copy.entries(), copy.strata, copy.n) == (window.entries(), window.strata, window.n)


def test_a_busy_source_s_state_stays_compact():
    det = Detector()
    feed = Feed(det, step=0.5)
    det.observe_run_start(make_run("A"))
    feed.decode(2.4, 2300, running=lambda i: 1 + (i * 13) % 90)
    det.observe_run_start(make_run("B", "A", LAYER_DIFF))
    feed.decode(1.9, 2300, running=lambda i: 1 + (i * 13) % 90)
    assert any(f.active for f in det.findings())
    size = len(json.dumps(det.checkpoint(), separators=(",", ":")))
    assert size < 33_000  # two full 2000-interval windows' worth, a head, the swing's histograms, a finding
