"""``grafana sync`` against a server whose reply never ends: refused at a bound, not buffered."""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterator

import pytest

from acceptmon.apps.dashboard import MAX_REPLY
from acceptmon.cli import main
from tests.support.grafana_server import FakeGrafana


@pytest.fixture
def grafana(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGrafana]:
    with FakeGrafana() as g:
        monkeypatch.setenv("ACCEPTMON_GRAFANA_TOKEN", g.state.token)
        yield g


def test_a_reply_past_the_bound_is_a_clear_error_in_bounded_memory(
    grafana: FakeGrafana, capsys: pytest.CaptureFixture[str]
) -> None:
    grafana.state.oversize = 4 * MAX_REPLY
    tracemalloc.start()
    try:
        assert main(["grafana", "sync", "--url", grafana.url]) == 1
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    err = capsys.readouterr().err
    assert "listing data sources: Grafana's reply is larger than 16 MiB: refused" in err, err
    assert "Traceback" not in err and grafana.state.token not in err
    assert peak < 2.5 * MAX_REPLY, f"peak {peak >> 20} MiB for a {grafana.state.oversize >> 20} MiB reply"


def test_a_reply_within_the_bound_still_syncs(
    grafana: FakeGrafana, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["grafana", "sync", "--url", grafana.url]) == 0
    assert "created (version 1)" in capsys.readouterr().out
