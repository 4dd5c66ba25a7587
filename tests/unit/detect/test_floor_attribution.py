"""A floor breach is not caused by the change that ended the bad run (issue 25 §10).

On main a breach that began in the bad run but fired only after the revert (or fired again in
it) carried the revert's diff: Slack said "below floor … after change of <the revert>"."""

from __future__ import annotations

from acceptmon.detect import FLOOR, Detector, DetectSettings, Floor
from tests.support.detect import LAYER_DIFF, LAYER_KEY, REVERT_DIFF, Feed, make_run


def _floor_findings(bad_in_b: int, c_level: float) -> list[str]:
    det = Detector(DetectSettings(floor=Floor(accept_len=2.0)))
    feed = Feed(det)
    det.observe_run_start(make_run("A"))
    feed.decode(2.41, 300, sd=0.05)
    det.observe_run_start(make_run("B", "A", LAYER_DIFF))
    feed.decode(1.6, 5 + bad_in_b, sd=0.05)  # warm-up, then the bad run's first intervals
    det.observe_run_start(make_run("C", "B", REVERT_DIFF))
    found = feed.decode(c_level, 40, sd=0.05)
    return [f"{f.run_id} {f.changed_keys()} {f.diff} | {f.summary}" for f in found if f.rule == FLOOR]


def test_a_breach_that_began_before_the_revert_is_not_blamed_on_it() -> None:
    """Six bad intervals in B, then a revert that did not help: it fires in C."""
    (text,) = _floor_findings(6, 1.6)
    assert text.startswith(f"C ['{LAYER_KEY}']") and "[2, 20, 37], [1, 23, 44]" in text  # B's change
    assert "it began in run B" in text and "before run C: not caused by a config change to" in text


def test_a_breach_that_begins_after_a_change_is_still_that_change_s() -> None:
    det = Detector(DetectSettings(floor=Floor(accept_len=2.0)))
    feed = Feed(det)
    det.observe_run_start(make_run("A"))
    feed.decode(2.41, 300, sd=0.05)
    det.observe_run_start(make_run("B", "A", LAYER_DIFF))
    found = [f for f in feed.decode(1.6, 40, sd=0.05) if f.rule == FLOOR]
    assert [(f.run_id, f.diff) for f in found] == [("B", LAYER_DIFF)] and "began in" not in found[0].summary


def test_one_stray_low_interval_at_the_end_of_a_good_run_starts_no_breach() -> None:
    det = Detector(DetectSettings(floor=Floor(accept_len=2.0)))
    feed = Feed(det)
    det.observe_run_start(make_run("A"))
    feed.decode(2.41, 300, sd=0.05)
    feed.decode(1.8, 1, sd=0.0)
    det.observe_run_start(make_run("B", "A", LAYER_DIFF))
    found = [f for f in feed.decode(1.6, 40, sd=0.05) if f.rule == FLOOR]
    assert [(f.run_id, f.diff) for f in found] == [("B", LAYER_DIFF)]


def test_where_a_breach_began_survives_a_checkpoint() -> None:
    det = Detector(DetectSettings(floor=Floor(accept_len=2.0)))
    feed = Feed(det)
    det.observe_run_start(make_run("A"))
    feed.decode(2.41, 300, sd=0.05)
    det.observe_run_start(make_run("B", "A", LAYER_DIFF))
    feed.decode(1.6, 11, sd=0.05)
    det.observe_run_start(make_run("C", "B", REVERT_DIFF))
    again = Detector(DetectSettings(floor=Floor(accept_len=2.0)))
    again.restore(det.checkpoint())
    assert again.checkpoint() == det.checkpoint()
    assert again.checkpoint()["sources"]["gpu-a"]["current"]["floor_from"]["run_id"] == "B"
