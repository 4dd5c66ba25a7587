"""Resolving a URL's host through an OpenSSH client config."""

from __future__ import annotations

from pathlib import Path

import pytest

from acceptmon.sources.ssh.options import SSHSettings, resolve
from acceptmon.sources.ssh.url import SSHURLError, parse_ssh_url

CONFIG = """
Host gpu*
  User ops
  IdentityFile {tmp}/id_gpu
  UserKnownHostsFile {tmp}/known_gpu
  ServerAliveInterval 7
Host gpu1
  HostName 10.1.0.1
  Port 2201
  ProxyJump bastion
Host gpu2
  HostName 10.1.0.2
  IdentitiesOnly yes
  ProxyJump jump@edge:2022,bastion
Host bastion
  HostName bastion.example
  User jumper
Host loop
  ProxyJump loop
"""


@pytest.fixture
def settings(tmp_path: Path) -> SSHSettings:
    cfg = tmp_path / "config"
    cfg.write_text(CONFIG.format(tmp=tmp_path))
    return SSHSettings(ssh_config=str(cfg))


def test_alias_fills_host_user_port_keys_and_known_hosts(settings: SSHSettings, tmp_path: Path) -> None:
    p = resolve(parse_ssh_url("ssh://gpu1/var/log/x.log"), settings)
    assert (p.user, p.host, p.port) == ("ops", "10.1.0.1", 2201)
    assert p.identity_files == (f"{tmp_path}/id_gpu",)
    assert p.hostkeys.known_hosts == f"{tmp_path}/known_gpu"
    assert p.keepalive == 7 and p.use_agent
    assert p.jump is not None and (p.jump.user, p.jump.host, p.jump.port) == ("jumper", "bastion.example", 22)


def test_url_user_and_port_win_over_config(settings: SSHSettings) -> None:
    p = resolve(parse_ssh_url("ssh://root@gpu1:22/x.log"), settings)
    assert (p.user, p.port) == ("root", 22)


def test_jump_chain_goes_through_hops_in_order(settings: SSHSettings) -> None:
    p = resolve(parse_ssh_url("ssh://gpu2/x.log"), settings)
    assert not p.use_agent  # IdentitiesOnly
    assert p.jump is not None and (p.jump.host, p.jump.user) == ("bastion.example", "jumper")
    first = p.jump.jump
    assert first is not None and (first.user, first.host, first.port) == ("jump", "edge", 2022)
    assert first.jump is None


def test_settings_override_known_hosts_and_keys(tmp_path: Path, settings: SSHSettings) -> None:
    s = SSHSettings(
        ssh_config=settings.ssh_config,
        known_hosts=str(tmp_path / "kh"),
        identity_files=("/k1",),
        use_agent=False,
    )
    p = resolve(parse_ssh_url("ssh://gpu1/x.log"), s)
    assert p.hostkeys.known_hosts == str(tmp_path / "kh")
    assert p.identity_files[0] == "/k1" and not p.use_agent


def test_proxyjump_loop_is_a_config_error(settings: SSHSettings) -> None:
    with pytest.raises(SSHURLError, match="too long"):
        resolve(parse_ssh_url("ssh://loop/x.log"), settings)


def test_missing_config_file_means_plain_host(tmp_path: Path) -> None:
    p = resolve(parse_ssh_url("ssh://u@h:23/x.log"), SSHSettings(ssh_config=str(tmp_path / "none")))
    assert (p.user, p.host, p.port, p.jump) == ("u", "h", 23, None)
