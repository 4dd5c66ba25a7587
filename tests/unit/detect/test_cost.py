"""What a drop costs: throughput share lost with its interval, tokens lost, and the words."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from acceptmon.apps.demo import _finding_lines, replay
from acceptmon.detect.cost import (
    Cost,
    CostMeter,
    cost_of,
    cost_words,
    throughput_lost,
    tokens_lost,
)
from acceptmon.detect.findings import DROP, FLOOR
from acceptmon.detect.verdict import Verdict
from acceptmon.model import ConfigDiff, DecodeSample, Finding, Meta, Run, SpecConfig
from acceptmon.notify.alertmanager import build_alert
from acceptmon.notify.payload import finding_json
from acceptmon.notify.settings import Links
from acceptmon.notify.slack import build_slack_message

T0 = datetime(2026, 12, 1, 12, tzinfo=UTC)


DROPPED = Finding(
    rule=DROP,
    severity="critical",
    source="s",
    run_id="r2",
    baseline_run_id="r1",
    summary="accept len fell",
    first_seen=T0,
    key="k",
    before_accept_len=2.4,
    after_accept_len=1.6,
    before_ci=(2.35, 2.45),
    after_ci=(1.5, 1.7),
)


def drop(**kw: Any) -> Finding:
    return replace(DROPPED, **kw)


def test_throughput_lost_is_one_minus_after_over_before_with_a_delta_method_interval() -> None:
    fraction, interval = throughput_lost(2.4, 1.6, (2.35, 2.45), (1.5, 1.7))
    assert fraction == pytest.approx(1 / 3)
    assert interval is not None
    low, high = interval
    assert low < fraction < high
    assert high - low == pytest.approx(
        2 * (2 / 3) * math.hypot(0.1 / 1.96 / 1.6, 0.05 / 1.96 / 2.4) * 1.96, rel=1e-3
    )
    assert throughput_lost(2.4, 1.6, None, None) == (pytest.approx(1 / 3), None)


def test_tokens_lost_are_what_the_old_acceptance_would_have_added() -> None:
    # 1000 tokens generated at accept len 1.6 would have been 1500 at 2.4: 500 lost.
    assert tokens_lost(1000.0, 1 / 3) == pytest.approx(500.0)
    assert tokens_lost(1000.0, 0.0) == 0.0


def test_the_cost_line_reads_as_a_person_says_it() -> None:
    assert cost_words(Cost(0.347, (0.306, 0.390), 22_820.6)) == (
        "costing ≈ 35% of decode throughput (95% interval 31% to 39%), ≈ 22,800 tokens since first seen"
    )
    assert cost_words(Cost(0.2, None, 0.0)) == "costing ≈ 20% of decode throughput"


def test_only_drops_with_both_lengths_have_a_cost_and_per_token_measures_no_interval() -> None:
    assert cost_of(drop(rule=FLOOR)) is None
    assert cost_of(drop(before_accept_len=None)) is None
    per_token = cost_of(drop(measure="per_token_acceptance"))
    assert per_token is not None and per_token.interval is None
    # The draft got longer: per-token acceptance fell, accept len did not; no loss this can see.
    assert cost_of(drop(measure="per_token_acceptance", after_accept_len=2.45)) is None


def test_a_source_without_decode_lines_has_no_token_count_rather_than_zero() -> None:
    meter = CostMeter()  # vLLM: spec lines only, no generation throughput read
    meter.note([drop()])
    assert meter.fill(drop()).tokens_lost is None and meter.lost == {}


def _line(source: str, at: datetime, throughput: float) -> DecodeSample:
    return DecodeSample(Meta(source, 1, at), running_req=4, queue_req=0, gen_throughput=throughput)


def test_the_meter_counts_lines_after_first_seen_until_resolved_or_a_config_change() -> None:
    meter = CostMeter()
    for i in range(3):  # before the finding: nothing is lost yet
        meter.observe(_line("s", T0 - timedelta(seconds=2 * (3 - i)), 100.0))
    meter.note([drop()])  # before 2.4, after 1.6: each token generated cost half a token
    for i in range(1, 6):
        meter.observe(_line("s", T0 + timedelta(seconds=2 * i), 100.0))  # 200 tokens each
    # The first line after it covers the 4 s since the line before (SGLang's throughput window).
    assert meter.fill(drop()).tokens_lost == 600
    assert meter.lost == {("s", DROP): pytest.approx(600.0)}
    change = ConfigDiff(changed=(("draft.eagle_config.layers", [1], [2]),))
    meter.observe_run_start(Run("s", "r3", T0, 1, None, SpecConfig(), "r2", change))
    meter.observe(_line("s", T0 + timedelta(seconds=20), 100.0))
    meter.observe(_line("s", T0 + timedelta(seconds=22), 100.0))
    assert meter.lost == {("s", DROP): pytest.approx(600.0)}  # a revert stops the count


def test_a_resolved_drop_stops_counting_and_the_counter_survives_a_checkpoint() -> None:
    meter = CostMeter()
    meter.observe(_line("s", T0, 100.0))
    meter.note([drop()])
    meter.observe(_line("s", T0 + timedelta(seconds=2), 100.0))
    meter.note([drop(active=False, resolved_at=T0 + timedelta(seconds=3))])
    meter.observe(_line("s", T0 + timedelta(seconds=4), 100.0))
    assert meter.lost == {("s", DROP): pytest.approx(100.0)}
    again = CostMeter()
    again.restore(json.loads(json.dumps(meter.checkpoint())))
    assert again.lost == meter.lost and again.fill(drop()).tokens_lost == 100
    again.restore({"drops": [["k"]], "lost": 7})  # unreadable: afresh, never a crash
    assert again.lost == {}


def test_the_demo_incident_says_what_it_cost() -> None:
    _, _, findings = replay()
    (found,) = [f for f in findings if f.rule == DROP]
    lines = _finding_lines(findings)
    assert (
        "  costing ≈ 35% of decode throughput (95% interval 31% to 39%), ≈ 22,800 tokens since first seen "
        "(an estimate: the same step time assumed)"
    ) in lines
    cost = finding_json(found)["cost"]
    assert cost["throughput_lost"] == pytest.approx(0.348, abs=1e-3)
    assert cost["tokens_lost_since_first_seen"] == pytest.approx(22_821, abs=2)


def test_slack_firing_and_resolved_messages_carry_the_cost() -> None:
    firing = json.dumps(
        build_slack_message(drop(tokens_lost=1234.0), Links(), T0.timestamp()), ensure_ascii=False
    )
    assert "costing ≈ 33% of decode throughput" in firing and "≈ 1,230 tokens since first seen" in firing
    resolved = drop(active=False, resolved_at=T0 + timedelta(hours=1), tokens_lost=99_000.0)
    text = json.dumps(build_slack_message(resolved, Links(), T0.timestamp()), ensure_ascii=False)
    assert "While it lasted it was costing ≈ 33% of decode throughput" in text


def test_a_worse_verdict_says_what_it_costs() -> None:
    worse = Verdict("worse", "r2", "r1", -0.344, (-0.362, -0.327), 1e-9)
    assert worse.words().endswith("; costing ≈ 34% of decode throughput (95% interval 33% to 36%)")
    better = Verdict("better", "r3", "r2", 0.5, (0.4, 0.6), 1e-9)
    assert "costing" not in better.words()


def test_an_alert_sent_to_alertmanager_carries_the_cost_as_an_annotation() -> None:
    (alert,) = build_alert(drop(tokens_lost=5000.0), Links(), T0.timestamp(), 60.0)["alerts"]
    assert alert["annotations"]["cost"] == (
        "costing ≈ 33% of decode throughput (95% interval 29% to 38%), ≈ 5,000 tokens since first seen"
    )
    (floor,) = build_alert(drop(rule=FLOOR), Links(), T0.timestamp(), 60.0)["alerts"]
    assert "cost" not in floor["annotations"]
