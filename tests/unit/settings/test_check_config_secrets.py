"""Issue 19 item 16: ``check-config`` never echoes a secret pasted where a NAME belongs, and
reports every problem in one run (a user who fixes the first batch sees no second one)."""

from __future__ import annotations

from pathlib import Path

import pytest

from acceptmon import cli
from acceptmon.apps.agent import startup

SLACK_URL = "https://hooks.slack.com/services/T0PLANTED/B0PLANTED/PLANTEDslackSecret"


def _check(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    path = tmp_path / "acceptmon.yaml"
    path.write_text(text)
    code = cli.main(["check-config", str(path)])
    out = capsys.readouterr()
    return code, out.out + out.err


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("webhook_url_env", SLACK_URL),
        ("webhook_url_env", "xoxb-PLANTED-slack-token"),
        ("webhook_url_env", "hf_PLANTEDlooksLikeAName"),  # a valid variable name, but a token
        ("webhook_url_file", SLACK_URL),
    ],
)
def test_a_pasted_secret_is_reported_not_echoed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], key: str, value: str
) -> None:
    code, out = _check(tmp_path, f"sources: [/tmp/x.log]\nnotify:\n  slack:\n    {key}: '{value}'\n", capsys)
    assert code == startup.SETTINGS
    assert f"notify.slack.{key}" in out and "not shown" in out
    assert "PLANTED" not in out


def test_every_problem_in_one_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ACCEPTMON_UNSET_HOOK", raising=False)
    monkeypatch.setenv("ACCEPTMON_PLAIN_HTTP_HOOK", "http://hooks.example.org/x")
    code, out = _check(
        tmp_path,
        "poll_interval: -1\nsources: [/tmp/x.log]\n"
        "notify:\n"
        f"  slack:\n    webhook_url_env: '{SLACK_URL}'\n    min_interval_s: -5\n"
        "  webhook:\n    url_env: ACCEPTMON_UNSET_HOOK\n    bogus: 1\n"
        "  grafana:\n    token_env: ACCEPTMON_PLAIN_HTTP_HOOK\n",
        capsys,
    )
    assert code == startup.SETTINGS
    for expected in (
        "poll_interval",
        "notify.slack.min_interval_s",
        "notify.slack.webhook_url_env",
        "notify.webhook: unknown key 'bogus'",
        "from env ACCEPTMON_UNSET_HOOK: environment variable is not set",  # used to wait for round two
        "notify.grafana.url: required",
    ):
        assert expected in out, f"missing {expected!r} in:\n{out}"
    assert "PLANTED" not in out
    assert out.count("notify.grafana.url") == 1  # said once, not once per round
