"""SSH source settings, their one parser, and their resolution through ``~/.ssh/config``.

The URL names a host or an alias; ``paramiko.SSHConfig`` turns it into the
real hostname, user, port, identity files, ProxyJump chain and known_hosts
file, so that the agent connects exactly where ``ssh alias`` would.
"""

from __future__ import annotations

import getpass
import math
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import paramiko

from acceptmon.sources.ssh.hostkeys import HostKeyPolicy
from acceptmon.sources.ssh.url import SSHTarget, SSHURLError, parse_ssh_url
from acceptmon.text.suggest import shown

_DEFAULT_KEYS = ("~/.ssh/id_ed25519", "~/.ssh/id_ecdsa", "~/.ssh/id_rsa")


@dataclass(frozen=True, slots=True)
class SSHSettings:
    """Per-source knobs, read once from the source's YAML keys by ``parse_ssh_source``.

    ``known_hosts``/``identity_files`` override what the SSH config says;
    ``accept_unknown_host_key`` trusts (and records) a host key seen for the
    first time, never a changed one.
    """

    ssh_config: str | None = "~/.ssh/config"
    known_hosts: str | None = None
    accept_unknown_host_key: bool = False
    identity_files: tuple[str, ...] = ()
    use_agent: bool = True
    poll_interval: float = 0.5
    keepalive: int = 15
    connect_timeout: float = 10.0
    io_timeout: float = 30.0
    backoff_base: float = 0.5
    backoff_cap: float = 30.0
    buffer_bytes: int = 8 * 1024 * 1024
    step_bytes: int = 1024 * 1024
    glob_interval: float = 10.0
    settle: float = 0.5


def parse_ssh_source(url: str, options: Mapping[str, Any], where: str, problems: list[str]) -> SSHSettings:
    """An ``ssh://`` source's settings keys → ``SSHSettings``; every problem found without
    connecting (URL, types, files, the SSH config) is appended to ``problems``.

    The named files must exist and be readable, so that a typo is refused at
    ``check-config`` time, not found by a worker thread. A ``known_hosts`` that
    does not exist yet is fine only with ``accept_unknown_host_key`` (the first
    key seen is then written to it).
    """
    try:
        target = parse_ssh_url(url)
    except SSHURLError as exc:
        problems.append(f"{where}path: {exc}")
        return SSHSettings()
    before = len(problems)
    settings = _options(options, where, problems)
    if len(problems) > before:
        return settings
    try:
        resolve(target, settings)
    except (SSHURLError, ValueError, TypeError, OSError, paramiko.SSHException) as exc:
        problems.append(f"{where}ssh_config: cannot resolve {target.host!r}: {exc}")
    return settings


def _options(options: Mapping[str, Any], where: str, problems: list[str]) -> SSHSettings:
    kwargs: dict[str, Any] = {}
    accept = options.get("accept_unknown_host_key", False)
    if isinstance(accept, bool):
        kwargs["accept_unknown_host_key"] = accept
    else:
        problems.append(f"{where}accept_unknown_host_key: expected true or false, got {shown(accept)}")
        accept = False
    poll = options.get("poll_interval")
    if poll is not None:
        if _seconds(poll):
            kwargs["poll_interval"] = float(poll)
        else:
            problems.append(f"{where}poll_interval: expected a positive number of seconds, got {shown(poll)}")
    for key in ("identity_file", "known_hosts", "ssh_config"):
        value = options.get(key)
        if value is None:
            continue
        if not isinstance(value, str) or not value.strip():
            problems.append(f"{where}{key}: expected a file path, got {shown(value)}")
            continue
        problem = _readable(value, may_be_absent=key == "known_hosts" and accept)
        if problem:
            problems.append(f"{where}{key}: {value}: {problem}")
        kwargs["identity_files" if key == "identity_file" else key] = (
            (value,) if key == "identity_file" else value
        )
    return SSHSettings(**kwargs)


def _seconds(value: object) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return 0 < value < 1e9 and (isinstance(value, int) or math.isfinite(value))


def _readable(path: str, may_be_absent: bool) -> str | None:
    if "\0" in path:
        return "a file name cannot contain a NUL byte"
    full = os.path.expanduser(path)
    if may_be_absent and not os.path.lexists(full):
        return None
    try:
        if not stat.S_ISREG(os.stat(full).st_mode):
            return "not a regular file"
        os.close(os.open(full, os.O_RDONLY | os.O_NONBLOCK))
    except OSError as exc:
        return str(exc.strerror or type(exc).__name__).lower()
    return None


@dataclass(frozen=True, slots=True)
class ConnParams:
    """Everything needed to open one SSH connection (one hop)."""

    host: str
    port: int
    user: str
    identity_files: tuple[str, ...]
    use_agent: bool
    hostkeys: HostKeyPolicy
    connect_timeout: float
    keepalive: int
    jump: ConnParams | None = None

    @property
    def key(self) -> tuple[str, str, int]:
        """Connections are shared per (user, host, port)."""
        return (self.user, self.host, self.port)


def _load_config(path: str | None) -> paramiko.SSHConfig:
    if not path:
        return paramiko.SSHConfig()
    full = os.path.expanduser(path)
    if not os.path.exists(full):
        return paramiko.SSHConfig()
    return paramiko.SSHConfig.from_path(full)


def resolve(target: SSHTarget, settings: SSHSettings) -> ConnParams:
    """Resolve a URL's host (or alias) into connection parameters."""
    config = _load_config(settings.ssh_config)
    return _resolve_host(config, target.host, target.user, target.port, settings, depth=0)


def _resolve_host(
    config: paramiko.SSHConfig,
    alias: str,
    user: str | None,
    port: int | None,
    settings: SSHSettings,
    depth: int,
) -> ConnParams:
    if depth > 5:
        raise SSHURLError(f"ProxyJump chain through {alias!r} is too long (or loops)")
    found = config.lookup(alias)
    identities = _identities(found, settings)
    known = settings.known_hosts or _first(found.get("userknownhostsfile")) or "~/.ssh/known_hosts"
    only = str(found.get("identitiesonly", "no")).lower() == "yes"
    params = ConnParams(
        host=str(found.get("hostname", alias)),
        port=port if port is not None else int(found.get("port", 22)),
        user=user or str(found.get("user") or getpass.getuser()),
        identity_files=identities,
        use_agent=settings.use_agent and not only,
        hostkeys=HostKeyPolicy(os.path.expanduser(known), settings.accept_unknown_host_key),
        connect_timeout=float(found.get("connecttimeout", settings.connect_timeout)),
        keepalive=int(found.get("serveraliveinterval", settings.keepalive)),
    )
    jump = str(found.get("proxyjump", "none"))
    if jump.lower() == "none":
        return params
    return replace(params, jump=_resolve_jump(config, jump, settings, depth))


def _resolve_jump(config: paramiko.SSHConfig, spec: str, settings: SSHSettings, depth: int) -> ConnParams:
    """``ProxyJump a,b`` means: reach b through a, then the target through b."""
    hops = [h.strip() for h in spec.split(",") if h.strip()]
    params: ConnParams | None = None
    for hop in hops:
        user, host, port = _split_hop(hop)
        nxt = _resolve_host(config, host, user, port, settings, depth + 1)
        if params is not None:
            nxt = replace(nxt, jump=params)
        params = nxt
    if params is None:
        raise SSHURLError(f"empty ProxyJump {spec!r}")
    return params


def _split_hop(hop: str) -> tuple[str | None, str, int | None]:
    hop = hop.removeprefix("ssh://")
    user, _, hostport = hop.rpartition("@")
    host, port = hostport, None
    if hostport.startswith("["):
        host, _, rest = hostport[1:].partition("]")
        port = int(rest[1:]) if rest.startswith(":") else None
    elif hostport.count(":") == 1:
        host, p = hostport.split(":")
        port = int(p)
    return (user or None, host, port)


def _identities(found: paramiko.SSHConfigDict, settings: SSHSettings) -> tuple[str, ...]:
    listed = list(settings.identity_files) + list(found.get("identityfile", []))
    if not listed:
        listed = [p for p in _DEFAULT_KEYS if os.path.exists(os.path.expanduser(p))]
    out: list[str] = []
    for p in listed:
        full = os.path.expanduser(p)
        if full not in out:
            out.append(full)
    return tuple(out)


def _first(value: object) -> str | None:
    """``UserKnownHostsFile`` may list several files; we read and write the first."""
    if not value:
        return None
    text = value[0] if isinstance(value, list) else str(value)
    return str(text).split()[0] if str(text).strip() else None
