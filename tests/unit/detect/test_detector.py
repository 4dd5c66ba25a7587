"""The incremental Detector end to end on hand-made runs and series."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from datetime import timedelta

import pytest

from acceptmon.detect import COLLAPSED, DROP, FLOOR, STALLED, Detector, DetectSettings, Floor
from acceptmon.detect.source import SourceState
from acceptmon.model import ConfigDiff, Meta, Run, Shutdown, SpecConfig, SpecSample
from tests.support.detect import LAYER_DIFF, LAYER_KEY, REVERT_DIFF, T0, Feed, make_run


def test_eagle3_layer_change_fires_once_and_the_revert_resolves_it():
    """The real case: accept len 2.41 → 1.57 (rate 0.47 → 0.19) after the aux layer ids changed."""
    det = Detector()
    feed = Feed(det)
    det.observe_run_start(make_run("A"))
    assert feed.decode(2.41, 400) == []
    det.observe_run_start(make_run("B", "A", LAYER_DIFF))
    found = feed.decode(1.57, 100)
    assert len(found) == 1
    f = found[0]
    assert (f.rule, f.severity, f.active, f.key) == (DROP, "critical", True, f"{DROP}:gpu-a:A->B")
    assert f.changed_keys() == [LAYER_KEY] and LAYER_KEY in f.summary
    assert (f.baseline_run_id, f.run_id) == ("A", "B")
    assert f.before_accept_len == pytest.approx(2.41, abs=0.03)
    assert f.after_accept_len == pytest.approx(1.57, abs=0.08)
    assert f.before_accept_rate == pytest.approx(0.47, abs=0.01)
    assert f.after_accept_rate == pytest.approx(0.19, abs=0.03)
    assert f.before_ci is not None and f.before_ci[0] <= f.before_accept_len <= f.before_ci[1]
    assert f.after_ci is not None and f.after_ci[0] <= f.after_accept_len <= f.after_ci[1]
    assert f.p_value is not None and f.p_value < 0.001
    assert f.after_n == 20 and f.before_n == 395  # fired on the first test, 5 warm-up intervals skipped
    assert f.first_seen == T0 + timedelta(seconds=2 * (400 + 25))

    det.observe_run_start(make_run("C", "B", REVERT_DIFF))
    found = feed.decode(2.41, 100)
    assert [(g.key, g.active) for g in found] == [(f.key, False)]
    assert found[0].resolved_at is not None and found[0].resolved_at > f.first_seen
    assert found[0].summary == f.summary  # the record of what happened is kept


def test_a_restart_that_keeps_the_bad_config_keeps_the_finding_open():
    det = Detector()
    feed = Feed(det)
    feed.after_change(1.57, 100)
    det.observe_run_start(make_run("C", "B", ConfigDiff()))
    found = feed.decode(1.57, 200)
    assert [(f.key, f.active) for f in found] == [(f"{DROP}:gpu-a:A->B", True)]


def test_a_load_mix_change_alone_is_not_a_regression():
    """Same acceptance per load, a busier run: −12% pooled, nothing per stratum."""

    def level(running: int) -> float:
        return 2.5 if running < 4 else 2.2

    det = Detector()
    feed = Feed(det, seed=4)
    det.observe_run_start(make_run("A"))
    feed.decode(level, 600, running=lambda i: 2 if i % 10 else 80)
    det.observe_run_start(make_run("B", "A", LAYER_DIFF))
    assert feed.decode(level, 600, running=lambda i: 80 if i % 10 else 2) == []


def test_a_drop_without_a_config_change_says_so():
    (f,) = Feed(Detector()).after_change(1.9, 60, diff=ConfigDiff(), before=2.4)
    assert "no config change visible in server_args or draft config.json" in f.summary
    assert f.diff is None


def test_a_short_run_in_between_is_skipped_and_its_diff_composed():
    det = Detector()
    feed = Feed(det)
    det.observe_run_start(make_run("A"))
    feed.decode(2.4, 300)
    det.observe_run_start(make_run("B", "A", ConfigDiff(changed=(("x", 1, 2),))))
    feed.decode(2.4, 10)  # crashed during warm-up: too little to be anyone's baseline
    det.observe_run_start(make_run("C", "B", LAYER_DIFF))
    (f,) = feed.decode(1.6, 60)
    assert (f.baseline_run_id, f.run_id) == ("A", "C")
    assert sorted(f.changed_keys()) == sorted([LAYER_KEY, "x"])


def test_small_drops_below_the_effect_size_do_not_fire():
    det = Detector()
    feed = Feed(det, seed=5)
    det.observe_run_start(make_run("A"))
    feed.decode(2.4, 2000, sd=0.25)
    det.observe_run_start(make_run("B", "A", LAYER_DIFF))
    assert not det.status("gpu-a").decided
    assert feed.decode(2.4 * 0.95, 305, sd=0.25) == []  # significant, but only 5%
    assert det.status("gpu-a").decided


def test_collapse_fires_within_five_intervals_and_survives_a_restart():
    det = Detector()
    feed = Feed(det)
    det.observe_run_start(make_run("A"))
    feed.decode(2.4, 50)
    assert feed.decode(1.0, 4, sd=0.0) == []
    (f,) = [g for g in feed.decode(1.0, 1, sd=0.0) if g.rule == COLLAPSED]
    assert (f.severity, f.key, f.active) == ("critical", f"{COLLAPSED}:gpu-a", True)
    det.observe_run_start(make_run("B", "A", ConfigDiff()))
    still = [g for g in feed.decode(1.0, 20, sd=0.0) if g.rule == COLLAPSED]
    assert [(g.key, g.active, g.first_seen) for g in still] == [(f.key, True, f.first_seen)]
    healed = [g for g in feed.decode(2.4, 5) if g.rule == COLLAPSED]
    assert [(g.key, g.active) for g in healed] == [(f.key, False)]


def test_idle_intervals_do_not_count_as_collapse():
    det = Detector()
    feed = Feed(det)
    for _ in range(20):
        det.observe(feed.sample(1.0, running=0))
    assert det.evaluate(feed.t) == []


def test_floor_per_source_fires_when_sustained():
    cfg = DetectSettings(source_floors=(("gpu-a", Floor(accept_len=2.0)),))
    det = Detector(cfg)
    feed = Feed(det)
    det.observe_run_start(make_run("A"))
    assert feed.decode(2.4, 100) == []
    found = feed.decode(1.7, 10 + 5, sd=0.05)
    assert [(f.rule, f.severity, f.active) for f in found] == [(FLOOR, "warning", True)]
    assert "below its floor (accept len 2.00)" in found[0].summary
    other = Feed(det, source="gpu-b")
    det.observe_run_start(make_run("A", source="gpu-b"))
    other.decode(1.7, 100, sd=0.05)
    assert [f.source for f in det.evaluate(other.t)] == ["gpu-a"]  # no default floor


def test_stall_fires_after_stall_s_and_resolves_when_lines_resume():
    det = Detector()
    feed = Feed(det)
    det.observe_run_start(make_run("A"))
    feed.decode(2.4, 30, running=16)
    last = feed.t
    assert det.evaluate(last + timedelta(seconds=120)) == []
    (f,) = det.evaluate(last + timedelta(seconds=121))
    assert (f.rule, f.key, f.active) == (STALLED, f"{STALLED}:gpu-a", True)
    assert "16 requests were running" in f.summary
    feed.t += timedelta(seconds=300)
    (g,) = feed.decode(2.4, 1)
    assert (g.key, g.active, g.resolved_at) == (f.key, False, feed.t)


def test_idle_after_a_drained_batch_and_a_graceful_shutdown_are_not_stalls():
    det = Detector()
    feed = Feed(det)
    det.observe_run_start(make_run("A"))
    feed.decode(2.4, 30, running=2)
    assert det.evaluate(feed.t + timedelta(hours=6)) == []
    feed.decode(2.4, 30, running=40)
    det.observe(Shutdown(Meta("gpu-a", 999, feed.t), "SIGTERM received"))
    assert det.evaluate(feed.t + timedelta(minutes=10)) == []


def test_without_now_the_newest_log_time_is_used():
    det = Detector()
    busy, other = Feed(det), Feed(det, source="gpu-b")
    busy.decode(2.4, 10, running=32)
    other.t = busy.t + timedelta(minutes=5)
    other.decode(2.4, 1)
    assert [f.source for f in det.evaluate() if f.rule == STALLED] == ["gpu-a"]


def test_vllm_spec_lines_are_judged_the_same_way():
    det = Detector()
    t = T0

    def spec(accepted: int, n: int) -> None:
        nonlocal t
        for i in range(n):
            t += timedelta(seconds=10)
            jitter = (i * 7919) % 41 - 20
            det.observe(
                SpecSample(Meta("vllm-a", i, t), None, None, accepted + jitter, 900, num_spec_tokens=3)
            )

    det.observe_run_start(make_run("A", source="vllm-a"))
    spec(420, 100)  # accept len 1 + 3 * 420/900 = 2.40
    det.observe_run_start(make_run("B", "A", LAYER_DIFF, source="vllm-a"))
    spec(170, 40)  # 1.57
    (f,) = det.evaluate(t)
    assert (f.rule, f.source) == (DROP, "vllm-a")
    assert f.before_accept_len == pytest.approx(2.4, abs=0.05) and f.after_accept_len == pytest.approx(
        1.57, abs=0.05
    )


def test_state_stays_bounded_on_a_long_run():
    cfg = DetectSettings(window=200, recent=50, head=100)
    state = SourceState("gpu-a", cfg)
    det = Detector(cfg)
    feed = Feed(det)
    for i in range(5000):
        state.observe(feed.sample(2.4 + (i % 7) / 100, running=1 + i % 100))
    run = state.current
    assert (run.head.n, run.tail.n, run.recent.n) == (100, 200, 50)
    assert sum(sum(h.values()) for h in run.tail.strata.values()) == 200
    assert run.seen == 5000


def test_evaluate_is_deterministic():
    def replay() -> list[object]:
        return list(Feed(Detector(), seed=9).after_change(1.8, 60))

    assert replay() == replay()


def test_importing_the_detector_pulls_in_no_heavy_libraries():
    code = "import sys, acceptmon.detect; print(sorted({'scipy', 'pandas', 'numpy'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]"


def test_a_run_that_recovers_by_itself_resolves_its_drop():
    feed = Feed(Detector())
    (f,) = feed.after_change(1.8, 60)
    assert f.active
    (g,) = feed.decode(2.41, 100)  # e.g. the draft's config.json was fixed and re-read
    assert (g.key, g.active) == (f.key, False)


def test_warm_up_lasts_until_the_start_up_queue_has_drained():
    cfg = DetectSettings(warmup_intervals=5, warmup_max_intervals=30)
    det = Detector(cfg)
    feed = Feed(det)
    det.observe_run_start(make_run("A"))
    for queue in (90, 60, 30, 10, 5, 2, 1):
        det.observe(feed.sample(2.4, running=64, queue=queue))
    assert det.status("gpu-a").used == 0
    det.observe(feed.sample(2.4, running=64, queue=0))
    assert (det.status("gpu-a").intervals, det.status("gpu-a").used) == (8, 1)
    for _ in range(40):
        det.observe(feed.sample(2.4, running=64, queue=9))  # a queue that never drains
    assert det.status("gpu-a").used == 41


def test_a_permanent_queue_ends_the_warm_up_at_its_cap():
    det = Detector(DetectSettings(warmup_intervals=5, warmup_max_intervals=30))
    feed = Feed(det)
    det.observe_run_start(make_run("A"))
    for _ in range(40):
        det.observe(feed.sample(2.4, running=64, queue=9))
    assert det.status("gpu-a").used == 10


def test_a_floor_breach_ends_when_the_new_run_has_no_floor():
    cfg = DetectSettings(model_floors=(("llama", Floor(accept_len=2.0)),))
    det = Detector(cfg)
    feed = Feed(det)
    llama = replace(make_run("A"), spec=SpecConfig(num_steps=3, model_path="llama"))
    det.observe_run_start(llama)
    (f,) = feed.decode(1.7, 20, sd=0.05)
    assert (f.rule, f.active) == (FLOOR, True)
    det.observe_run_start(
        make_run("B", "A", ConfigDiff(changed=(("server_args.model_path", "llama", "qwen"),)))
    )
    (g,) = det.evaluate(feed.t)
    assert (g.key, g.active) == (f.key, False)


def test_evaluating_one_source_leaves_the_others_as_they_were():
    det = Detector()
    busy, other = Feed(det), Feed(det, source="gpu-b")
    busy.decode(2.4, 10, running=32)
    other.decode(2.4, 1, running=1)
    later = busy.t + timedelta(minutes=5)
    assert det.evaluate(later, source="gpu-b") == []
    assert [f.source for f in det.evaluate(later)] == ["gpu-a"]
    assert [f.source for f in det.evaluate(later, source="gpu-b")] == ["gpu-a"]


# -- issue 12: quiet servers, draft-length changes, workload swings ---------------------------


def _chain(k: int, topk: int = 1) -> SpecConfig:
    return SpecConfig(algorithm="EAGLE3", num_steps=k, eagle_topk=topk, num_draft_tokens=k + 1)


def _steps_run(rid: str, k: int, prev: str | None, topk: int = 1) -> Run:
    diff = None if prev is None else ConfigDiff(changed=(("args.speculative_num_steps", 0, k),))
    return Run("gpu-a", rid, T0, 0, None, _chain(k, topk), prev, diff)


def _alpha_len(alpha: float, k: int) -> float:
    return sum(alpha**i for i in range(k + 1))


def test_a_quiet_server_is_judged_on_a_baseline_older_than_baseline_s():
    """A line every 3 minutes, one request at a time: 30 minutes hold 10 intervals, too few to test."""
    for keep, fires in ((200, True), (0, False)):
        det = Detector(DetectSettings(baseline_min=keep))
        feed = Feed(det, step=180.0, seed=2)
        det.observe_run_start(make_run("A"))
        feed.decode(2.6, 150, running=1, sd=0.35)
        det.observe_run_start(make_run("B", "A", LAYER_DIFF))
        found = feed.decode(2.6 * 0.65, 50, running=1, sd=0.35)
        assert bool(found) == fires
        if fires:
            (f,) = found
            assert f.rule == DROP and f.before_n == 145 and f.after_n <= 50


def test_five_draft_steps_to_three_with_the_same_draft_is_not_a_regression():
    det = Detector()
    feed = Feed(det, seed=5)
    det.observe_run_start(_steps_run("A", 5, None))
    feed.decode(_alpha_len(0.7, 5), 400, sd=0.15)
    det.observe_run_start(_steps_run("B", 3, "A"))
    assert feed.decode(_alpha_len(0.7, 3), 300, sd=0.15) == []  # accept len −14%


def test_a_worse_draft_behind_a_longer_one_is_found_on_per_token_acceptance():
    """2 → 6 steps, α 0.8 → 0.6: accept len flat (2.44 → 2.43)."""
    det = Detector()
    feed = Feed(det, seed=6)
    det.observe_run_start(_steps_run("A", 2, None))
    feed.decode(_alpha_len(0.8, 2), 400, sd=0.15)
    det.observe_run_start(_steps_run("B", 6, "A"))
    (f,) = feed.decode(_alpha_len(0.6, 6), 60, sd=0.15)
    assert (f.rule, f.measure) == (DROP, "per_token_acceptance")
    assert f.before_per_token == pytest.approx(0.8, abs=0.03)
    assert f.after_per_token == pytest.approx(0.6, abs=0.03)
    assert f.before_accept_len == pytest.approx(f.after_accept_len or 0, rel=0.05)  # accept len is flat
    assert f.before_ci is not None and f.before_ci[1] < 1.0  # the intervals are α's
    assert "per-token acceptance" in f.summary and "steps 2 → 6" in f.measure_note


def test_a_tree_draft_is_compared_on_accept_len_and_the_finding_says_why():
    det = Detector()
    feed = Feed(det, seed=7)
    det.observe_run_start(_steps_run("A", 3, None))
    feed.decode(2.5, 400)
    det.observe_run_start(_steps_run("B", 5, "A", topk=4))
    (f,) = feed.decode(1.6, 60)
    assert f.measure == "accept_len" and f.before_per_token is None
    assert "tree draft (topk 4)" in f.measure_note and "tree draft" in f.summary


def test_the_same_draft_shape_says_accept_len_was_compared():
    (f,) = Feed(Detector()).after_change(1.57, 60)
    assert (f.measure, f.measure_note, f.before_per_token) == ("accept_len", "", None)


def _swinging_run(feed: Feed, det: Detector) -> None:
    """Run A: its prompt mix swings acceptance ±15% in blocks of 200, ending on a high."""
    det.observe_run_start(make_run("A"))
    for level in (2.5, 2.5 * 0.85, 2.5 * 1.15, 2.5 * 0.85, 2.5 * 1.15):
        feed.decode(level, 200, sd=0.15)


@pytest.mark.parametrize(
    ("diff", "swing_block", "fires"),
    [(ConfigDiff(), 100, False), (LAYER_DIFF, 100, True), (ConfigDiff(), 0, True)],
    ids=["plain-restart", "config-change", "swings-off"],
)
def test_a_plain_restart_is_judged_against_the_range_the_baseline_sustained(
    diff: ConfigDiff, swing_block: int, fires: bool
) -> None:
    """The new run starts on a low (−26% against the last window's high): the old run showed as much."""
    det = Detector(DetectSettings(swing_block=swing_block))
    feed = Feed(det, seed=8)
    _swinging_run(feed, det)
    det.observe_run_start(make_run("B", "A", diff))
    found = feed.decode(2.5 * 0.85, 300, sd=0.15)
    assert bool(found) == fires


def test_a_plain_restart_below_the_whole_range_is_still_found():
    det = Detector()
    feed = Feed(det, seed=9)
    _swinging_run(feed, det)
    det.observe_run_start(make_run("B", "A", ConfigDiff()))
    (f,) = feed.decode(1.5, 60, sd=0.15)
    assert f.rule == DROP and "below the lowest level run A sustained" in f.summary
