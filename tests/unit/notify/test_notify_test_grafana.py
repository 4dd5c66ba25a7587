"""``acceptmon notify-test`` posts a Grafana annotation the way the agent does: to the configured
URL with the token as bearer (it used the token as the URL and always failed; issue 25 item 7)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from acceptmon.cli import main
from tests.support.grafana_server import FakeGrafana


@pytest.fixture
def grafana() -> Iterator[FakeGrafana]:
    with FakeGrafana() as g:
        yield g


def _config(tmp_path: Path, g: FakeGrafana) -> Path:
    path = tmp_path / "acceptmon.yaml"
    path.write_text(
        f"notify:\n  grafana:\n    url: {g.url}\n    token_env: GF_TOKEN\n    allow_insecure_localhost: true\n"
    )
    return path


def test_notify_test_delivers_an_annotation(
    tmp_path: Path, grafana: FakeGrafana, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GF_TOKEN", grafana.state.token)
    assert main(["notify-test", "--config", str(_config(tmp_path, grafana))]) == 0
    out, err = capsys.readouterr()
    assert "grafana: delivered a sample message (HTTP 200" in out, err
    assert len(grafana.state.annotations) == 1
    assert "Test message from `acceptmon notify-test`" in grafana.state.annotations[0]["text"]
    assert grafana.state.token not in out + err


def test_notify_test_names_a_wrong_token_without_showing_it(
    tmp_path: Path, grafana: FakeGrafana, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GF_TOKEN", "wrongTokenValue0123456789")
    assert main(["notify-test", "--config", str(_config(tmp_path, grafana))]) == 1
    out, err = capsys.readouterr()
    assert "grafana: rejected (HTTP 401" in err
    assert "wrongTokenValue0123456789" not in out + err
    assert grafana.state.annotations == []
