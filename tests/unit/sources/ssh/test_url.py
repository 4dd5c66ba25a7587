"""ssh:// source URLs."""

from __future__ import annotations

import pytest

from acceptmon.sources.ssh.url import SSHTarget, SSHURLError, parse_ssh_url


@pytest.mark.parametrize(
    ("url", "want"),
    [
        ("ssh://gpu1/var/log/sglang.log", SSHTarget("gpu1", "/var/log/sglang.log")),
        ("ssh://ops@gpu1:2222/var/log/*.log", SSHTarget("gpu1", "/var/log/*.log", "ops", 2222)),
        ("ssh://[::1]:22/x.log", SSHTarget("::1", "/x.log", None, 22)),
        ("ssh://h/dir%20with%20space/x.log", SSHTarget("h", "/dir with space/x.log")),
    ],
)
def test_parse(url: str, want: SSHTarget) -> None:
    assert parse_ssh_url(url) == want


def test_glob_flag_and_round_trip() -> None:
    t = parse_ssh_url("ssh://ops@gpu1:2222/var/log/*.log")
    assert t.is_glob and not parse_ssh_url("ssh://h/a.log").is_glob
    assert parse_ssh_url(t.url()) == t


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://h/x.log", "not an ssh"),
        ("ssh:///x.log", "no host"),
        ("ssh://h", "absolute"),
        ("ssh://h/", "absolute"),
        ("ssh://u:pw@h/x.log", "passwords"),
        ("ssh://h:99999/x.log", "bad port"),
        ("ssh://h/logs/*/x.log", "only supported in the file name"),
    ],
)
def test_rejects(url: str, why: str) -> None:
    with pytest.raises(SSHURLError, match=why):
        parse_ssh_url(url)


def test_a_password_in_the_url_is_never_echoed() -> None:
    with pytest.raises(SSHURLError) as err:
        parse_ssh_url("ssh://bob:hunter2@gpu-7/var/log/x.log")
    assert "hunter2" not in str(err.value) and "passwords in URLs are not supported" in str(err.value)
