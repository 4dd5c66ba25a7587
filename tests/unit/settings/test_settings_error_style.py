"""One error type, one style: ``check-config``, ``run`` and ``notify-test`` print refused
settings alike (``acceptmon: FILE: invalid settings:`` then one ``  - where: what`` per
problem, exit 2), and a refused SIGHUP reload logs the same text, whichever stage refused."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from acceptmon import cli
from acceptmon.apps.agent import daemon, startup
from acceptmon.apps.agent.agent import Agent
from acceptmon.clock import ManualClock
from acceptmon.notify.settings import NotifySettingsError
from acceptmon.settings import load

BAD = "sources: [/x.log]\npoll_interval: -1\nnotify:\n  slak: {}\n"
EXPECTED = (
    "invalid settings:\n"
    "  - poll_interval: expected a positive number of seconds, got -1\n"
    "  - notify: unknown key 'slak'; did you mean 'slack'?\n"
)


@pytest.mark.parametrize(
    "argv",
    [["check-config", "{path}"], ["run", "--config", "{path}"], ["notify-test", "--config", "{path}"]],
)
def test_every_command_prints_refused_settings_alike(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    path = tmp_path / "acceptmon.yaml"
    path.write_text(BAD)
    assert cli.main([a.format(path=path) for a in argv]) == startup.SETTINGS
    assert capsys.readouterr().err == f"acceptmon: {path}: {EXPECTED}"


def test_a_reload_refused_by_the_notifiers_logs_the_same_style(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "server.log").write_text("")
    path = tmp_path / "acceptmon.yaml"
    path.write_text(f"state_dir: {tmp_path / 'state'}\nsources: [{tmp_path / 'server.log'}]\n")
    agent = Agent(load(str(path)), clock=ManualClock())
    agent.open()
    http = [daemon.serve(agent)]

    def vanished(_settings: object) -> None:  # the webhook file went between the load and the build
        raise NotifySettingsError(["slack webhook URL from file /etc/hook: cannot read the file"])

    monkeypatch.setattr(agent, "reconfigure", vanished)
    try:
        with caplog.at_level(logging.ERROR, logger="acceptmon.agent.daemon"):
            daemon._reload(agent, str(path), [], {}, http, None)
    finally:
        agent.close()
        http[0].stop()
    assert not agent.reload_ok
    assert caplog.messages == [
        "reload refused, keeping the running settings:\ninvalid settings:\n"
        "  - slack webhook URL from file /etc/hook: cannot read the file"
    ]
