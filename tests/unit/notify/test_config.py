"""notify: config parsing, URL loading and validation — and that no message shows a URL."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import pytest

from acceptmon.notify.secret import Secret, scrub
from acceptmon.notify.settings import NotifySettingsError, parse_notify_settings
from acceptmon.notify.urls import load_url, parse_checked

SECRET_PATH = "/services/T0SECRET/B0SECRET/zZsecretTokenZz"
SLACK_URL = "https://hooks.slack.com" + SECRET_PATH
ENV = "ACCEPTMON_SLACK_WEBHOOK"


def slack(**extra: object) -> dict[str, Any]:
    return {"slack": {"webhook_url_env": ENV, **extra}}


def test_defaults() -> None:
    cfg = parse_notify_settings(slack())
    assert cfg.slack is not None and cfg.webhook is None
    assert (cfg.slack.min_interval_s, cfg.slack.renotify_s, cfg.slack.max_queue) == (1.0, 14400.0, 1000)
    assert cfg.slack.allow_insecure_localhost is False
    assert parse_notify_settings(None).channels() == []


def test_full_section() -> None:
    cfg = parse_notify_settings(
        {
            "state_dir": "/var/lib/acceptmon/notify",
            "slack": {
                "webhook_url_file": "/etc/acceptmon/slack-webhook",
                "min_interval_s": 2,
                "renotify_s": 60,
                "max_queue": 5,
                "timeout_s": 3,
                "links": {"grafana": "https://g/d?from={from_ms}&to={to_ms}", "window_s": 600},
            },
            "webhook": {"url_env": "HOOK", "allow_insecure_localhost": True},
        }
    )
    assert cfg.slack is not None and cfg.webhook is not None
    assert cfg.slack.url_file == "/etc/acceptmon/slack-webhook" and cfg.slack.min_interval_s == 2.0
    assert cfg.slack.links.templates == (("grafana", "https://g/d?from={from_ms}&to={to_ms}"),)
    assert cfg.slack.links.window_s == 600.0
    assert cfg.webhook.url_env == "HOOK" and cfg.webhook.allow_insecure_localhost
    assert cfg.state_dir == "/var/lib/acceptmon/notify"


@pytest.mark.parametrize(
    ("section", "problem"),
    [
        ([], "notify: must be a mapping"),
        ({"slak": {}}, "unknown key 'slak'"),
        ({"slack": {}}, "set exactly one of webhook_url_env or webhook_url_file"),
        ({"slack": {"webhook_url_env": "A", "webhook_url_file": "/f"}}, "set exactly one"),
        ({"webhook": {"webhook_url_env": "A"}}, "unknown key 'webhook_url_env'"),
        (slack(min_interval_s=-1), "min_interval_s: must be a number >= 0"),
        (slack(max_queue=0), "max_queue: must be a whole number >= 1"),
        (slack(max_queue=2.5), "max_queue: must be a whole number"),
        (slack(timeout_s="10"), "timeout_s: must be a number"),
        (slack(allow_insecure_localhost="yes"), "must be true or false"),
        (slack(links={"grafana": "https://g/{nope}"}), "unknown field {nope}"),
        (slack(links={"runbook": "wiki/{rule}"}), "must start with https://"),
        (slack(links={"grafana": "https://g/{"}), "not a valid format string"),
        (slack(links={"dashboard": "https://g"}), "unknown key 'dashboard'"),
    ],
)
def test_structural_problems(section: object, problem: str) -> None:
    with pytest.raises(NotifySettingsError) as err:
        parse_notify_settings(section)
    assert any(problem in p for p in err.value.problems), err.value.problems


def test_all_problems_reported_at_once() -> None:
    problems = parse_checked({"slack": {"max_queue": 0, "timeout_s": 0}, "bogus": 1})[1]
    assert len(problems) == 4


@pytest.mark.parametrize(
    ("url", "extra", "problem"),
    [
        (SLACK_URL, {}, None),
        ("https://example.com" + SECRET_PATH, {}, "is not an https://hooks.slack.com/services/... URL"),
        ("http://hooks.slack.com" + SECRET_PATH, {}, "is not an https://hooks.slack.com/services/... URL"),
        ("http://127.0.0.1:8080" + SECRET_PATH, {}, "needs allow_insecure_localhost: true"),
        ("http://127.0.0.1:8080" + SECRET_PATH, {"allow_insecure_localhost": True}, None),
        ("http://10.0.0.1:8080" + SECRET_PATH, {"allow_insecure_localhost": True}, "is not an https://"),
        ("http://127.0.0.1:port" + SECRET_PATH, {"allow_insecure_localhost": True}, "is not a valid URL"),
        (SLACK_URL + " " + SLACK_URL, {}, "contains whitespace"),
        ("", {}, "environment variable is not set or empty"),
    ],
)
def test_slack_url_from_env(url: str, extra: dict[str, Any], problem: str | None) -> None:
    problems = parse_checked(slack(**extra), env={ENV: url})[1]
    if problem is None:
        assert problems == []
    else:
        assert len(problems) == 1 and problem in problems[0]
        assert problems[0].startswith(f"slack webhook URL from env {ENV}")
    assert "SECRET" not in " ".join(problems) and "secretToken" not in " ".join(problems)


def test_generic_webhook_accepts_any_https_host() -> None:
    assert parse_checked({"webhook": {"url_env": "H"}}, env={"H": "https://hooks.example.org/x"})[1] == []
    problems = parse_checked({"webhook": {"url_env": "H"}}, env={"H": "http://hooks.example.org/x"})[1]
    assert problems == ["webhook URL from env H is not an https:// URL"]


def test_url_from_file(tmp_path: Path) -> None:
    path = tmp_path / "slack-webhook"
    path.write_text(SLACK_URL + "\n")
    channel = parse_notify_settings({"slack": {"webhook_url_file": str(path)}}).slack
    assert channel is not None
    assert load_url(channel, env={}).reveal() == SLACK_URL
    path.write_bytes(b"\xff\xfe")
    with pytest.raises(NotifySettingsError, match="not UTF-8"):
        load_url(channel, env={})
    path.unlink()
    with pytest.raises(NotifySettingsError) as err:
        load_url(channel, env={})
    assert err.value.problems == [
        f"slack webhook URL from file {path}: cannot read the file (No such file or directory)"
    ]


def test_secret_never_prints() -> None:
    secret = Secret(SLACK_URL)
    for rendering in (
        str(secret),
        repr(secret),
        f"{secret}",
        format(secret, ""),
        f"{secret!r}",
        str([secret]),
    ):
        assert "secretToken" not in rendering and "redacted" in rendering
    with pytest.raises(TypeError):
        pickle.dumps(secret)
    assert secret.reveal() == SLACK_URL


@pytest.mark.parametrize(
    "text",
    [
        f"URL can't contain control characters. {SECRET_PATH!r}",
        f"<urlopen error {SLACK_URL}>",
        f"POST {SECRET_PATH} failed",
        "redirect to https://other.example/with/token?x=1 refused",
    ],
)
def test_scrub_removes_urls_and_paths(text: str) -> None:
    cleaned = scrub(text, Secret(SLACK_URL))
    assert "secretToken" not in cleaned and "://" not in cleaned and "<redacted>" in cleaned
