"""Config loading: sane defaults, every problem reported at once."""

from __future__ import annotations

from pathlib import Path

import pytest

from acceptmon.config import ConfigError, from_mapping, load


def test_command_line_sources_need_no_file() -> None:
    cfg = load(
        None, ["/var/log/sglang/*.log", "ssh://gpu7/var/log/sglang/server.log", "-", "journald:sglang"]
    )
    assert [s.kind for s in cfg.sources] == ["file", "ssh", "stdin", "journald"]
    assert cfg.sources[0].name == "/var/log/sglang/*.log"
    assert cfg.listen_addr() == ("127.0.0.1", 9469)


def test_every_problem_is_reported_together() -> None:
    with pytest.raises(ConfigError) as err:
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
    with pytest.raises(ConfigError, match=needle):
        load(str(path))


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load(str(tmp_path / "absent.yaml"))
