"""Slack message content and Block Kit limits."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from acceptmon.model import ConfigDiff, Finding
from acceptmon.notify.blockkit import validate_blocks
from acceptmon.notify.settings import Links
from acceptmon.notify.slack import build_slack_message

NOW = 1_700_000_000.0
LINKS = Links(
    (
        ("grafana", "https://grafana.example/d/acc?var-source={source}&from={from_ms}&to={to_ms}"),
        ("runbook", "https://wiki.example/runbooks/{rule}"),
    ),
    window_s=3600.0,
)


def finding(**overrides: object) -> Finding:
    base = Finding(
        rule="accept_len_drop",
        severity="critical",
        source="gpu-3:/var/log/sglang.log",
        run_id="run-7",
        baseline_run_id="run-6",
        summary="Accept length fell 36% after restart with new draft settings",
        first_seen=datetime.fromtimestamp(NOW - 600, UTC),
        key="gpu-3/accept_len_drop/run-7",
        before_accept_len=3.21,
        after_accept_len=2.05,
        before_accept_rate=0.74,
        after_accept_rate=0.41,
        before_ci=(3.15, 3.27),
        after_ci=(1.98, 2.11),
        before_n=120,
        after_n=45,
        p_value=0.0002,
        diff=ConfigDiff(
            changed=(("speculative_num_steps", 3, 5), ("speculative_eagle_topk", 1, 4)),
            added=(("draft_config.rope_scaling", {"type": "yarn"}),),
            removed=(("cuda_graph_max_bs", 160),),
        ),
        host="gpu-3",
        model="meta-llama/Llama-3.1-8B",
        draft_model="eagle3-8b",
        labels=(("cluster", "eu-1"), ("team", "inference")),
    )
    return replace(base, **overrides)  # type: ignore[arg-type]


def all_text(payload: dict[str, Any]) -> str:
    return json.dumps(payload, ensure_ascii=False)


def test_firing_message_answers_the_on_call_questions() -> None:
    payload = build_slack_message(finding(), LINKS, NOW)
    text = all_text(payload)
    assert validate_blocks(payload) == []
    header = payload["blocks"][0]["text"]["text"]
    assert header.startswith("🔴 CRITICAL") and "gpu-3" in header
    for needle in [
        "3.21 → *2.05* (−36.1%)",  # before → after accept length
        "74.0% → *41.0%* (−33.0 pp)",  # accept rate
        "CI 3.15–3.27 · n=120",
        "CI 1.98–2.11 · n=45 · p<0.001",
        "meta-llama/Llama-3.1-8B",
        "eagle3-8b",
        "`speculative_num_steps`: `3` → `5`",
        "`cuda_graph_max_bs`: `160` → _(removed)_",
        "_(added)_",
        f"<!date^{int(NOW - 600)}^",
    ]:
        assert needle in text, needle
    assert payload["text"].startswith(
        "[CRITICAL] accept len drop on gpu-3 (gpu-3:/var/log/sglang.log): accept length 3.21 → 2.05"
    )


def test_links_carry_the_time_range_around_the_change() -> None:
    text = all_text(build_slack_message(finding(), LINKS, NOW))
    start_ms = int((NOW - 600 - 3600) * 1000)
    end_ms = int((NOW + 900) * 1000)
    assert f"var-source=gpu-3%3A%2Fvar%2Flog%2Fsglang.log&from={start_ms}&to={end_ms}|" in text
    assert "<https://wiki.example/runbooks/accept_len_drop|📖 Runbook>" in text


def test_resolved_message_is_short_and_says_how_long_it_lasted() -> None:
    resolved = finding(
        active=False,
        resolved_at=datetime.fromtimestamp(NOW + 7200, UTC),
        now_accept_len=3.18,
        now_accept_rate=0.727,
    )
    payload = build_slack_message(resolved, LINKS, NOW + 7200)
    assert validate_blocks(payload) == []
    where = "gpu-3 (gpu-3:/var/log/sglang.log)"
    assert payload["blocks"][0]["text"]["text"] == f"✅ RESOLVED: accept len drop on {where}"
    assert payload["text"] == f"[RESOLVED] accept len drop on {where}: now accept len 3.18, accept rate 72.7%"
    assert "Acceptance now: accept len 3.18, accept rate 72.7%" in all_text(payload)
    assert "after 2h 10m" in all_text(payload)
    assert "Config changes" not in all_text(payload)


def test_two_hundred_long_changed_keys_stay_within_limits() -> None:
    changed = tuple((f"server_args.key_{i:03d}_" + "k" * 300, "o" * 5000, "n" * 5000) for i in range(200))
    big = finding(
        diff=ConfigDiff(changed=changed),
        summary="s" * 10_000,
        source="x" * 5000,
        host="h" * 500,
        model="m" * 5000,
        labels=tuple((f"l{i}", "v" * 900) for i in range(30)),
    )
    payload = build_slack_message(big, LINKS, NOW)
    assert validate_blocks(payload) == []
    diff_text = next(b["text"]["text"] for b in payload["blocks"] if "Config changes" in str(b))
    shown = diff_text.count("• ")
    assert 0 < shown < 200
    assert diff_text.endswith(f"…and {200 - shown} more changed keys")
    assert len(payload["blocks"][0]["text"]["text"]) <= 150


def test_values_cannot_ping_or_inject_links() -> None:
    hostile = finding(
        summary="<!channel> look at <https://evil.example|this>",
        diff=ConfigDiff(changed=(("k`ey", "<!here>", "a`b&c"),)),
    )
    payload = build_slack_message(hostile, Links(), NOW)
    text = all_text(payload)
    assert "<!channel>" not in text and "<!here>" not in text and "<https://evil" not in text
    assert "&lt;!channel&gt;" in text
    assert validate_blocks(payload) == []


def test_missing_numbers_render_as_na() -> None:
    sparse = finding(
        before_accept_len=None,
        after_accept_len=float("nan"),
        before_accept_rate=None,
        after_accept_rate=None,
        before_ci=None,
        p_value=None,
        diff=None,
        first_seen=None,
        labels=(),
        baseline_run_id=None,
    )
    payload = build_slack_message(sparse, Links(), NOW)
    text = all_text(payload)
    assert validate_blocks(payload) == []
    assert "n/a → *n/a*" in text and "CI n/a · n=120" in text
    assert "Config changes" not in text and "Grafana" not in text


def _payload(*blocks: dict[str, Any], text: object = "fallback") -> dict[str, Any]:
    return {"text": text, "blocks": list(blocks)}


def _section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


@pytest.mark.parametrize(
    ("payload", "problem"),
    [
        (_payload(text=""), "fallback is missing"),
        (_payload(text=None), "fallback is missing"),
        (_payload(*[{"type": "divider"}] * 51), "51 blocks > 50"),
        (_payload({"type": "header", "text": {"type": "plain_text", "text": "h" * 151}}), "151 chars > 150"),
        (
            _payload({"type": "header", "text": {"type": "mrkdwn", "text": "h"}}),
            "type must be one of plain_text",
        ),
        (_payload(_section("s" * 3001)), "3001 chars > 3000"),
        (_payload(_section("")), "text is missing or empty"),
        (_payload({"type": "section"}), "needs text or fields"),
        (_payload({"type": "section", "fields": [{"type": "mrkdwn", "text": "f"}] * 11}), "has 11"),
        (
            _payload({"type": "section", "fields": [{"type": "mrkdwn", "text": "f" * 2001}]}),
            "2001 chars > 2000",
        ),
        (_payload({"type": "context", "elements": []}), "has 0"),
        (_payload({"type": "image"}), "unsupported block type"),
        (_payload({"type": "divider", "block_id": "b" * 256}), "block_id longer than 255"),
    ],
)
def test_validate_blocks_reports_each_limit(payload: dict[str, Any], problem: str) -> None:
    problems = validate_blocks(payload)
    assert any(problem in p for p in problems), problems


def test_validate_blocks_accepts_the_edges() -> None:
    edge = _payload(
        {"type": "header", "text": {"type": "plain_text", "text": "h" * 150}},
        _section("s" * 3000),
        *[{"type": "divider"}] * 48,
    )
    assert validate_blocks(edge) == []


def test_fallback_text_names_at_most_three_keys() -> None:
    many = finding(diff=ConfigDiff(changed=tuple((f"k{i}", 1, 2) for i in range(7))))
    text = build_slack_message(many, Links(), NOW)["text"]
    assert re.search(r"after change of k0, k1, k2 \(\+4 more\)$", text)


def test_a_drop_says_which_measure_was_compared() -> None:
    """Accept length unless the draft's length changed; then per-token acceptance, and why."""
    from acceptmon.detect.findings import DROP

    plain = all_text(build_slack_message(finding(rule=DROP), LINKS, NOW))
    assert "*Compared*\\naccept length" in plain
    note = "draft steps 2 → 6: per-token acceptance α compared (chain model)"
    payload = build_slack_message(
        finding(
            rule=DROP,
            measure="per_token_acceptance",
            measure_note=note,
            before_per_token=0.8,
            after_per_token=0.6,
            before_accept_len=2.44,
            after_accept_len=2.43,
        ),
        LINKS,
        NOW,
    )
    assert validate_blocks(payload) == []
    text = all_text(payload)
    assert "per-token acceptance α 0.80 → *0.60* (−25.0%)" in text and note in text
    assert "per-token acceptance 0.80 → 0.60 (accept length 2.44 → 2.43)" in payload["text"]
