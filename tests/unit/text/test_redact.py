"""Which server_args keys and values are secrets, and what a redacted value keeps."""

from __future__ import annotations

import json

import pytest

from acceptmon.model import Meta, ServerStart
from acceptmon.parse.sglang import parse_server_args
from acceptmon.text import redact


@pytest.mark.parametrize(
    ("key", "secret"),
    [
        ("api_key", True),
        ("admin_api_key", True),
        ("ssl_keyfile_password", True),
        ("hf_token", True),
        ("apiKey", True),
        ("db-credentials", True),
        ("client_secret_file", True),  # "secret" anywhere
        ("ssl_keyfile", False),  # a path
        ("speculative_token_map", False),  # a path that matters for acceptance
        ("max_total_tokens", False),
        ("speculative_num_draft_tokens", False),
        ("tokenizer_path", False),
        ("kv_cache_dtype", False),
    ],
)
def test_secret_key_names(key: str, secret: bool) -> None:
    assert redact.is_secret_key(key) is secret


@pytest.mark.parametrize(
    ("value", "kept", "gone"),
    [
        ("https://svc:hunter2pass@models.internal/q", "https://svc:<redacted:", "hunter2pass"),
        ("Authorization: Bearer abcdefgh12345", "Bearer <redacted:", "abcdefgh12345"),
        ("/cache/hf_abcdefghijklmnop/x", "/cache/<redacted:", "hf_abcdefghijklmnop"),
        ("token ghp_0123456789abcdefghij", "token <redacted:", "ghp_0123456789abcdefghij"),
        ("AKIAABCDEFGHIJKLMNOP", "<redacted:", "AKIAABCDEFGHIJKLMNOP"),
    ],
)
def test_credentials_inside_any_value(value: str, kept: str, gone: str) -> None:
    out = redact.redact_args({"model_path": value})["model_path"]
    assert kept in out and gone not in out


def test_nested_and_json_values() -> None:
    args = {
        "json_model_override_args": json.dumps({"hf_token": "plain-secret", "rope": 2}),
        "extra": {"login": {"password": "p", "user": "me"}, "list": ["hf_abcdefghijkl", 3]},
        "max_total_tokens": 4096,
        "api_key": None,
    }
    out = redact.redact_args(args)
    inner = json.loads(out["json_model_override_args"])
    assert inner["rope"] == 2 and redact.is_redacted(inner["hf_token"])
    assert redact.is_redacted(out["extra"]["login"]["password"]) and out["extra"]["login"]["user"] == "me"
    assert redact.is_redacted(out["extra"]["list"][0]) and out["extra"]["list"][1] == 3
    assert out["max_total_tokens"] == 4096 and out["api_key"] is None
    assert "plain-secret" not in json.dumps(out)


def test_fingerprints_show_a_change_but_not_the_value() -> None:
    a1, a1_again, a2 = (redact.redact_args({"api_key": v})["api_key"] for v in ("k1", "k1", "k2"))
    assert a1 == a1_again != a2 and "k1" not in a1
    assert redact.redact_args({"api_key": a1}) == {"api_key": a1}  # idempotent


def test_key_from_state_dir_is_private_and_stable(tmp_path) -> None:  # type: ignore[no-untyped-def]
    redact.load_key(tmp_path)
    first = redact.marker("v")
    key = tmp_path / "redact.key"
    assert key.stat().st_mode & 0o777 == 0o600
    redact.set_key(b"another key of some length")
    assert redact.marker("v") != first
    redact.load_key(tmp_path)
    assert redact.marker("v") == first


def test_server_args_are_redacted_as_they_are_parsed() -> None:
    text = "server_args=ServerArgs(model_path='m', api_key='sk-abcdefghijklmnop', tp_size=2)"
    record = parse_server_args(text, Meta("s", 1, None))
    assert isinstance(record, ServerStart)
    assert redact.is_redacted(record.args["api_key"]) and record.args["tp_size"] == 2
