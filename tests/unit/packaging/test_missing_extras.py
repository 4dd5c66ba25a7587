"""A command or API whose extra is not installed says which one, in one line, with its exit code.

The default install carries only the agent's dependencies; here each extra's
module is made unimportable (``sys.modules[name] = None``) as if it were absent.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import acceptmon
from acceptmon import cli, extras

DEMO = str(Path(acceptmon.__file__).parent / "apps" / "demo" / "data" / "demo-eagle3-incident.log")


def _missing(monkeypatch: pytest.MonkeyPatch, module: str) -> None:
    for name in [m for m in sys.modules if m == module or m.startswith(module + ".")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, module, None)


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert len(err.splitlines()) == 1, err
    return err.strip()


def test_report_without_matplotlib(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    _missing(monkeypatch, "matplotlib")
    assert cli.main(["report", DEMO, "-o", str(tmp_path / "r.html")]) == extras.EXIT == 2
    assert _one_line(capsys) == "acceptmon: report needs matplotlib: pip install 'acceptmon[report]'"
    assert not (tmp_path / "r.html").exists()


def test_grafana_sync_without_grafana_client(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _missing(monkeypatch, "grafana_client")
    monkeypatch.delenv("ACCEPTMON_GRAFANA_TOKEN", raising=False)  # the extra is named first
    assert cli.main(["grafana", "sync", "--url", "http://127.0.0.1:9"]) == 2
    assert (
        _one_line(capsys) == "acceptmon: grafana sync needs grafana-client: pip install 'acceptmon[grafana]'"
    )


def test_dashboard_sync_api_without_grafana_client(monkeypatch: pytest.MonkeyPatch) -> None:
    from acceptmon.apps import dashboard

    _missing(monkeypatch, "grafana_client")
    with pytest.raises(extras.MissingExtra, match=r"pip install 'acceptmon\[grafana\]'"):
        dashboard.sync("http://127.0.0.1:9", "token")


@pytest.mark.parametrize("name", ["read_log", "read_runs"])
def test_frames_without_pandas(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    _missing(monkeypatch, "pandas")
    with pytest.raises(ImportError) as caught:  # what a notebook would catch for a missing module
        getattr(acceptmon, name)(DEMO)
    assert isinstance(caught.value, extras.MissingExtra)
    assert str(caught.value) == f"acceptmon.{name} needs pandas: pip install 'acceptmon[frames]'"
    assert caught.value.__suppress_context__  # one message, not pandas' own ImportError under it
