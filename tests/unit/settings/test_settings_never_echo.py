"""A problem never echoes a value or key that looks like a secret, whichever section it is in:
every echoed value goes through ``text.suggest.shown`` (keys through ``named``), one rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from acceptmon import cli
from acceptmon.apps.agent import startup
from acceptmon.text.suggest import NOT_SHOWN, shown

HOOK = "https://hooks.slack.com/services/T0PLANTED/B0PLANTED/PLANTEDsecret"


@pytest.mark.parametrize(
    ("text", "where"),
    [
        (f"listen: '{HOOK}'", "listen: expected HOST:PORT"),
        ("state_dir: ['sk-PLANTEDabcdefghijkl']", "state_dir: expected a directory path"),
        ("'xoxb-PLANTED-1234567890': 1", "top level: unknown key"),
        (f"detect: {{'{HOOK}': 1}}", "detect.<not shown"),
        ("notify:\n  slack: {webhook_url_env: X, 'hf_PLANTEDabcdefgh': 1}", "notify.slack: unknown key"),
        (f"sources: [{{path: /x.log, hf_home: ['{HOOK}']}}]", "sources[0].hf_home: expected a directory"),
    ],
)
def test_check_config_names_the_place_not_the_secret(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, where: str
) -> None:
    path = tmp_path / "acceptmon.yaml"
    path.write_text(("sources: [/x.log]\n" if "sources:" not in text else "") + text + "\n")
    assert cli.main(["check-config", str(path)]) == startup.SETTINGS
    err = capsys.readouterr().err
    assert where in err and NOT_SHOWN in err, err
    assert "PLANTED" not in err


def test_ordinary_values_are_still_shown() -> None:
    assert shown("127.0.0.1:99999") == "'127.0.0.1:99999'"
    assert shown(["/var/log/a.log", 3]) == "['/var/log/a.log', 3]"
    assert shown("ssh://ops@gpu7/var/log/x.log") == "'ssh://ops@gpu7/var/log/x.log'"
    assert shown("https://grafana.example.com") == "'https://grafana.example.com'"  # no path
