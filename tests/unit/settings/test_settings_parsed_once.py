"""Issue 20: acceptmon's own settings are parsed once per load, and the running agent uses
what the load parsed (before: detect and notify were parsed again by the agent, the web
config read again by the server, an ssh:// source's keys again by the source factory)."""

from __future__ import annotations

import collections
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

import bcrypt

from acceptmon.apps.agent import daemon
from acceptmon.apps.agent.agent import Agent
from acceptmon.clock import ManualClock
from acceptmon.settings import load
from acceptmon.sources import open_source

#: One function each parse of a section runs exactly once (names as on main and now).
LEAVES = {
    ("detect/settings.py", "_cross_checks"): "detect",
    ("notify/settings.py", "_parse"): "notify",
    ("settings/web.py", "_users"): "web",
    ("sources/ssh/options.py", "_readable"): "ssh file check",
}


@contextmanager
def counting() -> Iterator[collections.Counter[str]]:
    counts: collections.Counter[str] = collections.Counter()

    def profile(frame: FrameType, event: str, _arg: Any) -> None:
        if event == "call":
            code = frame.f_code
            for (suffix, name), section in LEAVES.items():
                if code.co_name == name and code.co_filename.endswith(suffix):
                    counts[section] += 1

    sys.setprofile(profile)
    try:
        yield counts
    finally:
        sys.setprofile(None)


def settings_file(tmp_path: Path, listen: str) -> Path:
    (tmp_path / "server.log").write_text("")
    (tmp_path / "hook").write_text("https://hooks.slack.com/services/T0/B0/parsedonce\n")
    hashed = bcrypt.hashpw(b"pw", bcrypt.gensalt(4)).decode()
    (tmp_path / "web.yml").write_text(f"basic_auth_users:\n  prom: '{hashed}'\n")
    path = tmp_path / "acceptmon.yaml"
    path.write_text(
        f"listen: '{listen}'\nstate_dir: {tmp_path / 'state'}\nread_draft_config: false\n"
        f"sources: [{tmp_path / 'server.log'}]\ndetect: {{min_drop: 0.2}}\n"
        f"notify:\n  slack: {{webhook_url_file: {tmp_path / 'hook'}}}\n"
        f"web_config_file: {tmp_path / 'web.yml'}\n"
    )
    return path


def test_start_and_a_reload_parse_each_section_once_per_load(tmp_path: Path) -> None:
    path = settings_file(tmp_path, "127.0.0.1:0")
    with counting() as counts:
        agent = Agent(load(str(path)), clock=ManualClock())
        agent.open()
        http = [daemon.serve(agent)]
    try:
        assert counts == {"detect": 1, "notify": 1, "web": 1}
        path.write_text(path.read_text().replace("127.0.0.1:0", "127.0.0.2:0"))  # a new server
        counts.clear()
        with counting() as counts:
            daemon._reload(agent, str(path), [], {}, http, None)
        assert agent.reload_ok and agent.settings.listen == "127.0.0.2:0"
        assert counts == {"detect": 1, "notify": 1, "web": 1}
    finally:
        agent.close()
        http[0].stop()


def test_an_ssh_source_is_read_once_and_built_from_what_was_read(tmp_path: Path) -> None:
    (tmp_path / "known_hosts").write_text("")
    (tmp_path / "id_test").write_text("")
    (tmp_path / "ssh_config").write_text("Host gpu*\n  User ops\n")
    path = tmp_path / "acceptmon.yaml"
    path.write_text(
        "sources:\n  - path: ssh://gpu7/var/log/x.log\n"
        f"    known_hosts: {tmp_path / 'known_hosts'}\n    identity_file: {tmp_path / 'id_test'}\n"
        f"    ssh_config: {tmp_path / 'ssh_config'}\n    accept_unknown_host_key: true\n"
    )
    with counting() as counts:
        cfg = load(str(path))
        open_source(cfg.sources[0], ManualClock()).close()
    assert counts["ssh file check"] == 3  # known_hosts, identity_file, ssh_config: once each
    ssh = cfg.sources[0].ssh
    assert ssh is not None and ssh.identity_files == (str(tmp_path / "id_test"),)
    assert ssh.accept_unknown_host_key
