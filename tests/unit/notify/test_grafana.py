"""Grafana annotations through the delivery queue, against a local server speaking Grafana's API."""

from __future__ import annotations

import logging
import shutil
import threading
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from acceptmon.clock import ManualClock
from acceptmon.model import ConfigDiff, Run, SpecConfig
from acceptmon.notify import build_notifier, parse_notify_settings
from acceptmon.notify.notifier import Notifier
from acceptmon.notify.settings import NotifySettingsError
from tests.support.grafana_server import FakeGrafana
from tests.support.wait import wait_for
from tests.unit.notify.test_slack import finding

RUN = Run(
    source="gpu-3:/var/log/sglang.log",
    run_id="r2",
    started=datetime(2026, 11, 30, 12, 0, tzinfo=UTC),
    started_lineno=1,
    config=None,
    spec=SpecConfig("EAGLE3", 3, 1, 4),
    previous_run_id="r1",
    diff=ConfigDiff(
        changed=(("draft.eagle_config.eagle_aux_hidden_state_layer_ids", [2, 30, 58], [-1, 2, 30]),)
    ),
)


@pytest.fixture
def grafana() -> Iterator[FakeGrafana]:
    with FakeGrafana() as g:
        yield g


def notifier(tmp_path: Path, g: FakeGrafana, clock: ManualClock, **extra: object) -> Notifier:
    section = {"grafana": {"url": g.url, "token_env": "GF_TOKEN", "allow_insecure_localhost": True, **extra}}
    return build_notifier(parse_notify_settings(section), tmp_path, clock, {"GF_TOKEN": g.state.token})


def drain(n: Notifier, clock: ManualClock) -> None:
    for _ in range(200):
        wait = n.step()
        if wait is None:
            return
        clock.advance(max(wait, 0.01))
    raise AssertionError("the queue never went idle")


def test_a_5xx_storm_delivers_each_annotation_once(tmp_path: Path, grafana: FakeGrafana) -> None:
    clock = ManualClock(1_764_500_000.0)
    grafana.state.fail.extend([503] * 8 + [500] * 4)
    n = notifier(tmp_path, grafana, clock)
    n.note_run(RUN)
    n.notify(finding())
    n.notify(replace(finding(), active=False, resolved_at=datetime.fromtimestamp(clock.now(), UTC)))
    drain(n, clock)
    assert not grafana.state.fail  # the storm happened
    kinds = sorted(next(t for t in a["tags"] if t in ("run", "finding")) for a in grafana.state.annotations)
    assert kinds == ["finding", "finding", "run"]
    run = next(a for a in grafana.state.annotations if "run" in a["tags"])
    assert "eagle_aux_hidden_state_layer_ids" in run["text"] and "config-change" in run["tags"]
    assert run["time"] == int(RUN.started.timestamp() * 1000)  # type: ignore[union-attr]
    resolved = next(a for a in grafana.state.annotations if "resolved" in a["tags"])
    assert resolved["timeEnd"] > resolved["time"]  # a region: from first seen to resolved


def test_an_unknown_outcome_is_looked_up_before_posting_again(tmp_path: Path, grafana: FakeGrafana) -> None:
    clock = ManualClock(1_764_500_000.0)
    grafana.state.hang_after_store = 1  # stored, then no answer: the client times out
    n = notifier(tmp_path, grafana, clock, timeout_s=0.5)
    n.note_run(RUN)
    drain(n, clock)
    assert len(grafana.state.annotations) == 1
    assert ("GET", "/api/annotations") in grafana.state.requests


def test_the_token_never_appears_in_logs_or_state(
    tmp_path: Path, grafana: FakeGrafana, caplog: pytest.LogCaptureFixture
) -> None:
    clock = ManualClock(1_764_500_000.0)
    grafana.state.fail.extend([401])
    with caplog.at_level(logging.DEBUG):
        n = notifier(tmp_path, grafana, clock)
        n.note_run(RUN)
        drain(n, clock)
    assert grafana.state.token not in caplog.text
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert grafana.state.token not in path.read_text(errors="replace"), path


def test_grafana_settings_are_checked() -> None:
    with pytest.raises(NotifySettingsError) as err:
        parse_notify_settings({"grafana": {"token_env": "X"}})
    assert "notify.grafana.url: required" in str(err.value)
    with pytest.raises(NotifySettingsError) as err:
        build_notifier(
            parse_notify_settings({"grafana": {"url": "http://grafana.internal", "token_env": "X"}}),
            Path("/nonexistent"),
            ManualClock(0.0),
            {"X": "tok"},
        )
    assert "expected an https:// URL" in str(err.value) and "tok" not in str(err.value)


def test_the_agent_annotates_run_starts_and_findings(
    tmp_path: Path, grafana: FakeGrafana, monkeypatch: pytest.MonkeyPatch
) -> None:
    from datetime import timedelta

    from acceptmon.apps.agent.agent import Agent
    from acceptmon.settings import from_mapping
    from acceptmon.testing import synth

    monkeypatch.setenv("GF_TOKEN", grafana.state.token)
    t0 = datetime(2026, 11, 30, 9, 0, 0)
    lines = [*synth.startup(t0, 1, speculative_num_steps=3)]
    lines += [synth.decode_line(t0 + timedelta(seconds=60 + i), 2.4, 8) for i in range(5)]
    lines += [*synth.startup(t0 + timedelta(hours=1), 2, speculative_num_steps=5)]
    (tmp_path / "s.log").write_text("\n".join(lines) + "\n")
    cfg = from_mapping(
        {
            "state_dir": str(tmp_path / "state"),
            "read_draft_config": False,
            "sources": [{"path": str(tmp_path / "s.log"), "name": "gpu"}],
            "notify": {
                "grafana": {"url": grafana.url, "token_env": "GF_TOKEN", "allow_insecure_localhost": True}
            },
        }
    )
    agent = Agent(cfg)
    try:
        agent.open()
        agent.step()
        wait_for(
            lambda: len([a for a in grafana.state.annotations if "run" in a["tags"]]) >= 2,
            20,
            f"run starts never annotated: {grafana.state.annotations}",
        )
    finally:
        agent.close()
    runs = sorted((a for a in grafana.state.annotations if "run" in a["tags"]), key=lambda a: a["time"])
    assert "run r1 started" in runs[0]["text"] and "args.speculative_num_steps" in runs[1]["text"]


def test_a_restart_after_a_kill_mid_post_looks_the_annotation_up_first(
    tmp_path: Path, grafana: FakeGrafana
) -> None:
    """Issue 19 item 8: the state as a ``kill -9`` during the POST leaves it, then a new process."""
    clock = ManualClock(1_764_500_000.0)
    grafana.state.hang_after_store = 1  # Grafana stores it; the answer never comes
    first = notifier(tmp_path / "a", grafana, clock, timeout_s=5)
    first.note_run(RUN)
    posting = threading.Thread(target=first.step)
    posting.start()
    wait_for(lambda: len(grafana.state.annotations) == 1, 10, "the annotation stored")
    shutil.copytree(tmp_path / "a", tmp_path / "b")  # the disk at the moment of the kill
    grafana.hung.set()
    posting.join(10)
    grafana.state.requests.clear()
    drain(notifier(tmp_path / "b", grafana, clock), clock)
    assert len(grafana.state.annotations) == 1
    assert grafana.state.requests[0] == ("GET", "/api/annotations")
