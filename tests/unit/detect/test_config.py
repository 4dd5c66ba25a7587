"""DetectSettings: defaults, parsing (``parse_detect_settings``), and every problem reported at once."""

from __future__ import annotations

import pytest

from acceptmon.detect import DetectSettings, Floor
from acceptmon.detect.settings import parse_detect_settings
from acceptmon.model import SpecConfig


def parsed(raw: object) -> DetectSettings:
    problems: list[str] = []
    settings = parse_detect_settings(raw, problems)
    assert problems == []
    return settings


def problems_of(raw: object) -> list[str]:
    problems: list[str] = []
    assert parse_detect_settings(raw, problems) == DetectSettings()  # the defaults, never half a section
    return problems


def test_defaults_are_the_documented_ones():
    c = DetectSettings()
    assert (c.warmup_intervals, c.min_before, c.min_after, c.alpha, c.min_drop) == (5, 20, 20, 0.001, 0.10)
    assert (c.collapse_max_len, c.stall_s) == (1.05, 120.0)
    assert parsed({}) == c


def test_parse_reads_every_kind_of_setting():
    c = parsed(
        {
            "alpha": 0.01,
            "min_drop": 0.2,
            "warmup_intervals": 3,
            "load_buckets": [2, 8, 32],
            "silent_s": 600,
            "baseline_s": None,
            "floor": {"accept_len": 1.5},
            "floors": {
                "sources": {"gpu-a": {"accept_len": 2.0, "accept_rate": 0.3}},
                "models": {"meta-llama/Llama-3.1-8B": {"accept_rate": 0.25}},
            },
        }
    )
    assert (c.alpha, c.min_drop, c.warmup_intervals, c.load_buckets) == (0.01, 0.2, 3, (2, 8, 32))
    assert c.silent_s == 600.0
    assert c.baseline_s is None  # explicitly off, not the default
    assert c.floor == Floor(accept_len=1.5)
    assert c.source_floors == (("gpu-a", Floor(2.0, 0.3)),)
    assert c.model_floors == (("meta-llama/Llama-3.1-8B", Floor(None, 0.25)),)


def test_all_problems_are_reported_at_once():
    bad = {
        "alpha": 1.5,
        "min_drop": "ten percent",
        "window": True,
        "warmup_intervals": 2.5,
        "load_buckets": [16, 4],
        "colapse_intervals": 5,
        "floor": {"accept_len": 0.5, "accept_rat": 0.2},
        "floors": {"sources": {"gpu-a": {"accept_rate": 7}}, "hosts": {}},
    }
    found = problems_of(bad)
    for needle in (
        "detect.alpha: must be a number in (0, 1), got 1.5",
        "detect.min_drop: must be a number in (0, 1), got 'ten percent'",
        "detect.window: must be an integer",
        "detect.warmup_intervals: must be an integer",
        "detect.load_buckets: must be strictly increasing",
        "detect.colapse_intervals: unknown setting",
        "detect.floor.accept_len: must be a number ≥ 1",
        "detect.floor.accept_rat: unknown setting",
        "detect.floors.sources.gpu-a.accept_rate: must be a number in (0, 1]",
        "detect.floors.hosts: unknown setting",
    ):
        assert any(p.startswith(needle) for p in found), needle
    assert len(found) == 10


def test_cross_field_problems_are_reported_together():
    found = problems_of({"min_drop": 0.05, "resolve_drop": 0.08, "recent": 10, "min_after": 30})
    assert "detect: resolve_drop must be below min_drop" in found
    assert "detect: min_after must be ≤ recent and ≤ head" in found


def test_a_section_that_is_not_a_mapping():
    assert problems_of([1]) == ["detect: must be a mapping"]


@pytest.mark.parametrize(
    ("source", "settings", "expected"),
    [
        ("gpu-a", SpecConfig(model_path="llama"), Floor(2.0)),
        ("gpu-b", SpecConfig(model_path="llama"), Floor(1.8)),
        ("gpu-b", SpecConfig(model_path="qwen", draft_model_path="eagle-llama"), Floor(1.6)),
        ("gpu-b", SpecConfig(model_path="qwen"), Floor(1.2)),
    ],
)
def test_floor_lookup_prefers_source_then_model_then_draft_then_default(source, settings, expected):
    c = parsed(
        {
            "floor": {"accept_len": 1.2},
            "floors": {
                "sources": {"gpu-a": {"accept_len": 2.0}},
                "models": {"llama": {"accept_len": 1.8}, "eagle-llama": {"accept_len": 1.6}},
            },
        }
    )
    assert c.floor_for(source, settings) == expected
