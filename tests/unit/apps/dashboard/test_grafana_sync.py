"""``acceptmon grafana sync`` with the real grafana-client against a local server speaking Grafana's API."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from acceptmon.apps.dashboard import UID, bundled
from acceptmon.cli import main
from tests.support.grafana_server import FakeGrafana


@pytest.fixture
def grafana(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGrafana]:
    with FakeGrafana() as g:
        monkeypatch.setenv("ACCEPTMON_GRAFANA_TOKEN", g.state.token)
        yield g


def sync(g: FakeGrafana, *extra: str) -> int:
    return main(["grafana", "sync", "--url", g.url, *extra])


def test_creates_then_updates_in_place_pointing_at_prometheus(
    grafana: FakeGrafana, capsys: pytest.CaptureFixture[str]
) -> None:
    assert sync(grafana, "--folder", "Inference") == 0
    out = capsys.readouterr().out
    assert "created (version 1) in folder 'Inference'" in out and f"{grafana.url}/d/{UID}" in out
    saved = grafana.state.dashboards[UID]
    assert saved["meta"]["folderTitle"] == "Inference"
    var = next(v for v in saved["dashboard"]["templating"]["list"] if v["type"] == "datasource")
    assert var["current"]["value"] == "prom-uid"
    assert len(saved["dashboard"]["panels"]) == len(bundled()["panels"])
    assert sync(grafana, "--folder", "Inference") == 0
    assert "unchanged" in capsys.readouterr().out and len(grafana.state.folders) == 1
    assert grafana.state.token not in capsys.readouterr().err


def test_an_edit_in_grafana_is_kept_unless_forced(
    grafana: FakeGrafana, capsys: pytest.CaptureFixture[str]
) -> None:
    assert sync(grafana) == 0
    edited = grafana.state.dashboards[UID]["dashboard"]
    edited["title"] = "acceptmon (our team's copy)"
    edited["version"] += 1
    assert sync(grafana) == 3
    assert "kept it" in capsys.readouterr().out
    assert grafana.state.dashboards[UID]["dashboard"]["title"] == "acceptmon (our team's copy)"
    assert sync(grafana, "--force") == 0
    assert grafana.state.dashboards[UID]["dashboard"]["title"] == bundled()["title"]


def test_refusals_are_one_line_without_the_token(
    grafana: FakeGrafana, capsys: pytest.CaptureFixture[str]
) -> None:
    grafana.state.datasources = []
    assert sync(grafana) == 1
    err = capsys.readouterr().err
    assert "Prometheus data source" in err and len(err.strip().splitlines()) == 1
    grafana.state.token = "another"
    assert sync(grafana) == 1
    err = capsys.readouterr().err
    assert "refused the token (401)" in err and "glsa_" not in err


def test_no_token_is_exit_2(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("ACCEPTMON_GRAFANA_TOKEN", raising=False)
    assert main(["grafana", "sync", "--url", "http://127.0.0.1:9"]) == 2
    assert "ACCEPTMON_GRAFANA_TOKEN" in capsys.readouterr().err


def test_unreachable_grafana_is_exit_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ACCEPTMON_GRAFANA_TOKEN", "x")
    assert main(["grafana", "sync", "--url", "http://127.0.0.1:9"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
