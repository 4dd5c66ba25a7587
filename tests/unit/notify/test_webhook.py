"""Generic JSON webhook payload and the HTTP outcome rules (no sockets)."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from email.utils import format_datetime

import pytest

from acceptmon.model import ConfigDiff
from acceptmon.notify.secret import Secret
from acceptmon.notify.settings import Links
from acceptmon.notify.transport import HttpTransport, Response, classify, parse_retry_after
from acceptmon.notify.webhook import build_webhook_payload
from tests.unit.notify.test_slack import NOW, finding


def test_payload_is_strict_json_with_the_whole_story() -> None:
    odd = finding(
        after_accept_len=float("nan"),
        p_value=float("inf"),
        diff=ConfigDiff(
            changed=(("a", 1.5, float("nan")), ("b", [1, (2, 3)], {"x": {4}})),
            added=(("c", datetime(2024, 1, 1, tzinfo=UTC)),),
        ),
    )
    payload = build_webhook_payload(odd, Links((("runbook", "https://w/{rule}"),)), NOW)
    decoded = json.loads(json.dumps(payload, allow_nan=False))
    assert decoded["state"] == "firing" and decoded["severity"] == "critical"
    assert decoded["after"] == {"accept_len": None, "accept_rate": 0.41, "ci": [1.98, 2.11], "n": 45}
    assert decoded["p_value"] is None
    assert decoded["diff"]["changed"] == [
        {"key": "a", "old": 1.5, "new": None},
        {"key": "b", "old": [1, [2, 3]], "new": {"x": "{4}"}},
    ]
    assert decoded["diff"]["added"] == [{"key": "c", "value": "2024-01-01 00:00:00+00:00"}]
    assert (decoded["host"], decoded["model"], decoded["draft_model"]) == (
        "gpu-3",
        "meta-llama/Llama-3.1-8B",
        "eagle3-8b",
    )
    assert decoded["labels"] == {"cluster": "eu-1", "team": "inference"}
    assert decoded["links"] == {"runbook": "https://w/accept_len_drop"}


def test_resolved_payload() -> None:
    resolved = finding(active=False, resolved_at=None, diff=None, now_accept_len=3.1, now_accept_rate=0.7)
    payload = build_webhook_payload(resolved, Links(), NOW)
    assert payload["state"] == "resolved"
    assert payload["now"] == {"accept_len": 3.1, "accept_rate": 0.7}
    assert payload["diff"] == {"changed": [], "added": [], "removed": []}


@pytest.mark.parametrize(
    ("status", "verdict"),
    [
        (200, "sent"),
        (204, "sent"),
        (None, "retry"),
        (408, "retry"),
        (429, "retry"),
        (500, "retry"),
        (503, "retry"),
        (400, "permanent"),
        (403, "permanent"),
        (404, "permanent"),
        (410, "permanent"),
        (301, "permanent"),
    ],
)
def test_classify(status: int | None, verdict: str) -> None:
    assert classify(Response(status, "")) == verdict


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("30", 30.0),
        (" 5 ", 5.0),
        (None, None),
        ("", None),
        ("soon", None),
        ("-3", None),
        (format_datetime(datetime.fromtimestamp(NOW + 90, UTC), usegmt=True), 90.0),
        (format_datetime(datetime.fromtimestamp(NOW - 90, UTC), usegmt=True), 0.0),
    ],
)
def test_parse_retry_after(header: str | None, expected: float | None) -> None:
    assert parse_retry_after(header, NOW) == expected


def test_transport_errors_never_carry_the_url() -> None:
    """http.client quotes the path in InvalidURL; the transport must not."""
    secret = Secret("http://127.0.0.1:9/services/T1/B1/sEcReTtOkEn\x01")
    response = HttpTransport(secret, 0.1).post(b"{}", "id")
    assert response.status is None
    assert "InvalidURL" in response.detail
    assert "sEcReTtOkEn" not in response.detail and "/services/" not in response.detail


def test_finding_helper_is_realistic() -> None:
    assert replace(finding(), severity="info").severity == "info"


def test_payload_says_which_measure_a_drop_was_compared_in() -> None:
    plain = build_webhook_payload(finding(), Links(()), NOW)["measure"]
    assert plain == {"name": "accept_len", "note": None, "before": None, "after": None}
    alpha = finding(measure="per_token_acceptance", measure_note="draft steps 2 → 6", before_per_token=0.8)
    got = build_webhook_payload(replace(alpha, after_per_token=float("nan")), Links(()), NOW)["measure"]
    assert got == {"name": "per_token_acceptance", "note": "draft steps 2 → 6", "before": 0.8, "after": None}
