"""Config loading: sane defaults, every problem reported at once."""

from __future__ import annotations

from pathlib import Path

import pytest

from acceptmon.settings import SettingsError, from_mapping, load


def test_command_line_sources_need_no_file() -> None:
    cfg = load(
        None, ["/var/log/sglang/*.log", "ssh://gpu7/var/log/sglang/server.log", "-", "journald:sglang"]
    )
    assert [s.kind for s in cfg.sources] == ["file", "ssh", "stdin", "journald"]
    assert cfg.sources[0].name == "/var/log/sglang/*.log"
    assert cfg.listen_addr() == ("127.0.0.1", 9469)


def test_every_problem_is_reported_together() -> None:
    with pytest.raises(SettingsError) as err:
        from_mapping(
            {
                "listen": "nowhere",
                "poll_interval": -1,
                "surprise": True,
                "sources": [
                    {"path": "/a.log", "name": "x"},
                    {"path": "/b.log", "name": "x"},
                    {"nam": 1},
                    "ssh://host",
                ],
                "detect": {"alpha": 5},
            }
        )
    text = str(err.value)
    for needle in (
        "listen",
        "poll_interval",
        "surprise",
        "'x' is used twice",
        "sources[2]",
        "remote path must be absolute",
        "detect.alpha",
    ):
        assert needle in text
    assert len(err.value.problems) >= 7


def test_yaml_file_and_overrides(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("state_dir: /tmp/x\nsources:\n  - path: /var/log/a.log\n    name: gpu-7\n")
    cfg = load(str(path), overrides={"listen": "0.0.0.0:9999", "state_dir": None})
    assert (cfg.state_dir, cfg.listen, cfg.sources[0].name) == ("/tmp/x", "0.0.0.0:9999", "gpu-7")


@pytest.mark.parametrize(("text", "needle"), [("[1, 2", "not valid YAML"), ("- a\n- b\n", "mapping")])
def test_broken_files_are_clear_errors(tmp_path: Path, text: str, needle: str) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(SettingsError, match=needle):
        load(str(path))


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="cannot read"):
        load(str(tmp_path / "absent.yaml"))


def test_timezone_host_and_labels_are_checked_at_load() -> None:
    with pytest.raises(SettingsError) as err:
        from_mapping(
            {
                "sources": [
                    {"path": "/a.log", "timezone": "Mars/Olympus"},
                    {"path": "/b.log", "timezone": 5, "host": ""},
                    {"path": "/c.log", "labels": {"rule": "x", "bad-name": "y"}},
                ]
            }
        )
    text = str(err.value)
    assert "sources[0].timezone: unknown time zone 'Mars/Olympus'" in text
    assert "sources[1].timezone: expected an IANA zone name" in text
    assert "sources[1].host: expected a non-empty string" in text
    assert "sources[2].labels: 'rule' is reserved" in text
    assert "sources[2].labels: 'bad-name' is not a Prometheus label name" in text
    cfg = from_mapping(
        {"sources": [{"path": "/a.log", "timezone": "Asia/Kolkata", "host": "n1", "labels": {"team": "x"}}]}
    )
    src = cfg.sources[0]
    assert (src.option("timezone"), src.option("host"), dict(src.option("labels"))) == (
        "Asia/Kolkata",
        "n1",
        {"team": "x"},
    )
