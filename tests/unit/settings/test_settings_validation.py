"""What the loader refuses, case by case: each is something that used to start and then fail."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from acceptmon.clock import ManualClock
from acceptmon.detect import DetectSettings
from acceptmon.detect.settings import parse_detect_settings
from acceptmon.notify import parse_checked
from acceptmon.settings import SettingsError, from_mapping
from acceptmon.sources import open_source


def problems(raw: dict[str, Any]) -> list[str]:
    with pytest.raises(SettingsError) as err:
        from_mapping(raw)
    return err.value.problems


def one_source(path: str, **options: Any) -> dict[str, Any]:
    return {"sources": [{"path": path, **options}]}


@pytest.mark.parametrize(
    ("url", "needle"),
    [
        ("ssh://gpu7:0/var/log/x.log", "bad port"),
        ("ssh://gpu7:65536/var/log/x.log", "bad port"),
        ("ssh://gpu7:ssh/var/log/x.log", "bad host or port"),
        ("ssh://:22/var/log/x.log", "no host"),
        ("ssh://ops@/var/log/x.log", "no host"),
        ("ssh://[::1/var/log/x.log", "IPv6"),
        ("ssh://[::1]x/var/log/x.log", "bad host or port"),
        ("ssh://::1/var/log/x.log", "bad host or port"),
        ("ssh:/gpu7/var/log/x.log", "not an ssh:// URL"),
        ("SSH:gpu7/var/log/x.log", "not an ssh:// URL"),
        ("ssh://gpu7", "must be absolute"),
        ("ssh://gpu7/", "must be absolute"),
        ("ssh://gpu7/~/x.log", "must be absolute"),
        ("ssh://gpu7/var/../x.log", "must be absolute"),
    ],
)
def test_bad_ssh_urls_are_refused(url: str, needle: str) -> None:
    found = problems(one_source(url))
    assert len(found) == 1 and found[0].startswith("sources[0].path: ") and needle in found[0], found


@pytest.mark.parametrize("url", ["ssh://ops@[::1]:2222/var/log/x.log", "ssh://gpu7:1/var/log/*.log"])
def test_good_ssh_urls_load_and_build(url: str) -> None:
    cfg = from_mapping(one_source(url))
    open_source(cfg.sources[0], ManualClock()).close()


def test_ssh_options_are_checked_at_load_time(tmp_path: Path) -> None:
    found = problems(
        one_source(
            "ssh://gpu7/var/log/x.log",
            poll_interval="fast",
            accept_unknown_host_key="yes",
            identity_file=str(tmp_path / "absent"),
            known_hosts=str(tmp_path),
            ssh_config=7,
        )
    )
    text = "\n".join(found)
    assert "sources[0].poll_interval: expected a positive number of seconds, got 'fast'" in text
    assert "sources[0].accept_unknown_host_key: expected true or false" in text
    assert f"sources[0].identity_file: {tmp_path / 'absent'}: no such file or directory" in text
    assert f"sources[0].known_hosts: {tmp_path}: not a regular file" in text
    assert "sources[0].ssh_config: expected a file path, got 7" in text
    assert len(found) == 5


def test_a_known_hosts_to_be_created_is_fine_only_when_unknown_keys_are_accepted(tmp_path: Path) -> None:
    absent = str(tmp_path / "known_hosts")
    assert "known_hosts" in problems(one_source("ssh://gpu7/x.log", known_hosts=absent))[0]
    from_mapping(one_source("ssh://gpu7/x.log", known_hosts=absent, accept_unknown_host_key=True))


def test_an_unusable_ssh_config_is_refused(tmp_path: Path) -> None:
    cfg = tmp_path / "config"
    cfg.write_text("Host gpu7\n  Port twenty-two\n")
    found = problems(one_source("ssh://gpu7/x.log", ssh_config=str(cfg)))
    assert found and "cannot resolve 'gpu7'" in found[0]


def test_ssh_only_keys_on_other_sources_are_refused() -> None:
    assert problems(one_source("/var/log/x.log", poll_interval=1)) == [
        "sources[0].poll_interval: only ssh:// sources use it"
    ]


@pytest.mark.parametrize(
    ("raw", "needle"),
    [
        ({"read_draft_config": "no"}, "read_draft_config: expected true or false (a YAML bool), got 'no'"),
        ({"read_from_beginning": 1}, "read_from_beginning: expected true or false"),
        ({"poll_interval": "1"}, "poll_interval: expected a positive number of seconds"),
        ({"checkpoint_interval": float("nan")}, "checkpoint_interval: expected a positive number"),
        ({"state_dir": ["x"]}, "state_dir: expected a directory path"),
        ({"listen": 9469}, "listen: expected HOST:PORT"),
        ({"listen": "127.0.0.1:65536"}, "listen: expected HOST:PORT"),
        ({"listen": "::1:9469"}, "listen: expected HOST:PORT"),
        ({"watch_files": "/etc/a.yaml"}, "watch_files: expected a list of file paths"),
        ({"detect": [1]}, "detect: expected a mapping, got list"),
        ({"notify": "slack"}, "notify: expected a mapping, got str"),
        ({"sources": {"path": "/x"}}, "sources: expected a list, got dict"),
        ({"pol_interval": 1}, "top level: unknown key 'pol_interval'; did you mean 'poll_interval'?"),
        ({7: 1}, "top level: unknown key 7"),
        ({"sources": [{"path": "/x", "nmae": "a"}]}, "sources[0]: unknown key 'nmae'; did you mean 'name'?"),
        ({"detect": {"min_dorp": 0.1}}, "detect.min_dorp: unknown setting; did you mean 'min_drop'?"),
        ({"notify": {"slak": {}}}, "notify: unknown key 'slak'; did you mean 'slack'?"),
    ],
)
def test_wrong_types_and_unknown_keys(raw: dict[str, Any], needle: str) -> None:
    found = problems({"sources": ["/var/log/x.log"], **raw})
    assert any(needle in p for p in found), found


def test_no_sources_is_a_settings_problem_like_the_others() -> None:
    assert sorted(problems({"poll_interval": 0})) == [
        "no sources: name log files on the command line or under 'sources:'",
        "poll_interval: expected a positive number of seconds, got 0",
    ]


@pytest.mark.parametrize(
    "section",
    [
        {"min_drop": [1]},
        {"floors": {"sources": {"a": 3}}},
        {"load_buckets": [[1]]},
        {1: 2},
        {"head": 10**400},
    ],
)
def test_detect_section_problems_are_listed_not_raised(section: dict[Any, Any]) -> None:
    found: list[str] = []
    assert parse_detect_settings(section, found) == DetectSettings()
    assert found and all(p.startswith("detect.") for p in found), found


def test_detect_section_that_is_not_a_mapping() -> None:
    assert problems({"sources": ["/x.log"], "detect": [1]}) == ["detect: expected a mapping, got list"]


@pytest.mark.parametrize(
    "section",
    [
        {"slack": 3},
        [1],
        {"slack": {"webhook_url_env": "X", "min_interval_s": float("nan")}},
        {"slack": {"webhook_url_env": "X", "renotify_s": 10**400}},
        {"webhook": {"url_env": "X", "links": {"window_s": float("inf")}}},
        {"slack": {1: 2}},
    ],
)
def test_notify_section_returns_problems_not_exceptions(section: Any) -> None:
    found = parse_checked(section, env={"X": "https://hooks.slack.com/services/T/B/x"})[1]
    assert found and all(isinstance(p, str) for p in found)
    loaded = problems({"sources": ["/x.log"], "notify": section})  # the loader's one parse
    assert loaded and all(isinstance(p, str) and p for p in loaded), loaded


def test_an_internal_error_is_one_line_without_its_message(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from acceptmon import cli
    from acceptmon.apps.agent import startup

    def broken(_args: Any) -> int:
        raise KeyError("https://hooks.slack.com/services/T/B/secret")

    monkeypatch.setattr(cli, "_check_config", broken)
    assert cli.main(["check-config", "x.yaml"]) == startup.RUNTIME
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and "secret" not in err
    assert err.startswith("acceptmon: internal error: KeyError at test_settings_validation.py:")


def test_an_alias_bomb_is_refused_without_expanding_it(tmp_path: Path) -> None:
    from acceptmon.settings import load

    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join(lines) + "\nsources: [/x.log]\ndetect: {min_drop: *a9}\nlisten: *a9\n")
    with pytest.raises(SettingsError) as err:
        load(str(path))
    assert max(len(p) for p in err.value.problems) < 400
    assert any(p.startswith("detect.min_drop: must be a number") for p in err.value.problems)


@pytest.mark.parametrize(
    ("source", "needle"),
    [
        ({"hf_home": 3}, "hf_home: expected a directory path"),
        ({"speculative": "steps=3"}, "speculative: expected a mapping"),
        ({"speculative": {"num_step": 3}}, "unknown key 'num_step'; did you mean 'num_steps'?"),
        ({"speculative": {"num_steps": 0}}, "speculative.num_steps: expected a whole number from 1 to 64"),
        ({"speculative": {"topk": True}}, "speculative.topk: expected a whole number"),
    ],
)
def test_draft_discovery_and_declared_speculative_settings_are_checked(
    source: dict[str, Any], needle: str
) -> None:
    with pytest.raises(SettingsError) as err:
        from_mapping({"sources": [{"path": "/var/log/x.log", **source}]})
    assert needle in str(err.value)


def test_declared_speculative_settings_load() -> None:
    spec = {"num_steps": 3, "num_draft_tokens": 4, "topk": 1}
    cfg = from_mapping({"sources": [{"path": "/var/log/x.log", "hf_home": "/data/hf", "speculative": spec}]})
    assert cfg.sources[0].speculative() == spec and cfg.sources[0].option("hf_home") == "/data/hf"
