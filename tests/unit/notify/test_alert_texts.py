"""What alerts say: where (host, labels), what (model, draft model, run) and, for a stall,
how long; a RESOLVED message says what acceptance is now. Findings come from the real
detector fed real log lines, then go through the real message builders."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from acceptmon.detect import Detector
from acceptmon.ingest import Pipeline
from acceptmon.ingest.findings import FindingLog
from acceptmon.labels import SourceIdentity, label_problems
from acceptmon.model import Finding
from acceptmon.notify.blockkit import validate_blocks
from acceptmon.notify.settings import Links
from acceptmon.notify.slack import build_slack_message
from acceptmon.notify.webhook import build_webhook_payload
from acceptmon.testing import synth

T0 = datetime(2026, 11, 30, 9, 0, 0)
MODEL = synth.BASE_ARGS["model_path"]
DRAFT = synth.BASE_ARGS["speculative_draft_model_path"]


def _feed(lines: list[str]) -> tuple[Pipeline, Detector]:
    from acceptmon.model import Chunk

    pipeline = Pipeline()
    detector = FindingLog(pipeline).detector
    pipeline.feed(Chunk("sglang", tuple(lines), 1))
    return pipeline, detector


def _stamped(f: Finding) -> Finding:
    from dataclasses import replace

    ident = SourceIdentity.of("ssh://ops@gpu-7:2222/var/log/sglang.log", None, {"cluster": "eu-1"})
    return replace(f, host=ident.host, labels=ident.labels)


def _text(payload: dict[str, Any]) -> str:
    return json.dumps(payload, ensure_ascii=False)


def test_stall_alert_says_how_long_and_what_was_running() -> None:
    lines = synth.startup(T0, 1) + [
        synth.decode_line(T0 + timedelta(seconds=60 + i), 2.4, 10) for i in range(30)
    ]
    _, detector = _feed(lines)
    last = T0 + timedelta(seconds=89)
    detector.evaluate(last.replace(tzinfo=UTC))  # watched since the last line: the stall clock runs
    (stall,) = [
        f
        for f in detector.evaluate(last.replace(tzinfo=UTC) + timedelta(hours=2, minutes=5))
        if f.rule == "log_stalled"
    ]
    stall = _stamped(stall)
    assert (stall.model, stall.draft_model) == (MODEL, DRAFT)
    payload = build_slack_message(stall, Links(), 0.0)
    assert validate_blocks(payload) == []
    text = _text(payload)
    assert "silent for 2 h 5 min" in payload["text"]
    assert payload["text"].startswith("[WARNING] log stalled on gpu-7 (sglang): ")
    assert MODEL in payload["text"] and DRAFT in payload["text"] and stall.run_id in payload["text"]
    assert "n/a" not in text and "Accept length" not in text and "Config changes" not in text
    assert "eu-1" in text


def _drop_then_revert() -> list[str]:
    lines: list[str] = []
    for run, (level, hours) in enumerate(((2.41, 0), (1.57, 7), (2.41, 14))):
        start = T0 + timedelta(hours=hours)
        lines += synth.startup(start, run + 1, speculative_num_steps=3 if run != 1 else 5)
        lines += [
            synth.decode_line(start + timedelta(seconds=50 + i), level + (i % 5) * 0.02, 8 + i % 4)
            for i in range(90)
        ]
        lines += synth.shutdown(start + timedelta(hours=6))
    return lines


def test_resolved_drop_says_what_acceptance_is_now() -> None:
    _, detector = _feed(_drop_then_revert())
    (drop,) = [f for f in detector.findings() if f.rule == "acceptance_drop_after_change"]
    assert not drop.active and drop.now_accept_len is not None and drop.now_accept_rate is not None
    assert abs(drop.now_accept_len - 2.45) < 0.1
    drop = _stamped(drop)
    payload = build_slack_message(drop, Links(), 0.0)
    assert validate_blocks(payload) == []
    now = f"accept len {drop.now_accept_len:.2f}, accept rate {drop.now_accept_rate * 100:.1f}%"
    assert payload["text"] == f"[RESOLVED] acceptance drop after change on gpu-7 (sglang): now {now}"
    assert f"Acceptance now: {now}." in _text(payload)
    hook = build_webhook_payload(drop, Links(), 0.0)
    assert (hook["host"], hook["model"], hook["draft_model"]) == ("gpu-7", MODEL, DRAFT)
    assert hook["labels"] == {"cluster": "eu-1"} and hook["now"]["accept_len"] == drop.now_accept_len


def test_identity_defaults_and_overrides() -> None:
    assert SourceIdentity.of("ssh://ops@gpu-7:2222/x").host == "gpu-7"
    assert SourceIdentity.of("ssh://[fe80::1]:22/x").host == "fe80::1"
    assert SourceIdentity.of("/var/log/x.log", "node-3").host == "node-3"
    import socket

    assert SourceIdentity.of("/var/log/x.log").host == socket.gethostname()


def test_label_names_are_prometheus_names_and_not_ours() -> None:
    assert label_problems({"cluster": "eu-1", "team": "infra"}) == []
    problems = label_problems({"host": "x", "source": "y", "9bad": "z", "__x": "w", "ok": ["list"]})
    text = "\n".join(problems)
    for needle in (
        "'host' is reserved",
        "'source' is reserved",
        "'9bad' is not",
        "'__x' is not",
        "ok: expected a string",
    ):
        assert needle in text, needle
    assert label_problems(["cluster"]) == ["expected a mapping of label name to string value, got list"]
