"""Open one authenticated SSH connection (through ProxyJump hops) and its SFTP session.

A raw ``paramiko.Transport`` is used instead of ``SSHClient`` so that the
host key is checked by our strict policy before any authentication, and so
that a jump host's ``direct-tcpip`` channel can serve as the socket.
Errors come out as ``ConnectError`` with a ``kind`` that becomes the
``acceptmon_source_errors_total{kind}`` label; messages never contain key
material or passphrases.
"""

from __future__ import annotations

import logging
import socket
from dataclasses import dataclass, field
from typing import Any, cast

import paramiko

from acceptmon.sources.ssh.banner import BannerError, Replay, read_identification
from acceptmon.sources.ssh.hostkeys import HostKeyRefused, check_host_key, preferred_algorithms
from acceptmon.sources.ssh.options import ConnParams

log = logging.getLogger(__name__)

#: paramiko logs every failed attempt with a traceback; we log state changes
#: ourselves, so its channel stays quiet unless someone lowers this level.
PARAMIKO_LOG = "acceptmon.ssh.paramiko"
logging.getLogger(PARAMIKO_LOG).setLevel(logging.CRITICAL)


class ConnectError(Exception):
    """A failed connection attempt; ``kind`` is auth, host_key, banner or unreachable."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass
class Connection:
    """One live transport, its SFTP session and the jump transports under it."""

    params: ConnParams
    transport: paramiko.Transport
    sftp: paramiko.SFTPClient
    hops: list[paramiko.Transport] = field(default_factory=list)

    def alive(self) -> bool:
        return self.transport.is_active() and all(t.is_active() for t in self.hops)

    def close(self) -> None:
        for closer in (self.sftp.close, self.transport.close, *(t.close for t in reversed(self.hops))):
            try:
                closer()
            except Exception:
                log.debug("ignored error while closing an SSH connection", exc_info=True)


def connect(params: ConnParams, io_timeout: float) -> Connection:
    """Connect, verify the host key, authenticate and start SFTP."""
    hops: list[paramiko.Transport] = []
    try:
        transport = _open_transport(params, hops)
        sftp = paramiko.SFTPClient.from_transport(transport)
        if sftp is None:
            raise ConnectError("unreachable", f"{_where(params)}: the server refused the SFTP subsystem")
        channel = sftp.get_channel()
        if channel is not None:
            channel.settimeout(io_timeout)
    except ConnectError:
        _close_all(hops)
        raise
    except Exception as exc:
        _close_all(hops)
        raise ConnectError(error_kind(exc), f"{_where(params)}: {_describe(exc)}") from None
    return Connection(params, transport, sftp, hops[:-1])


def _close_all(transports: list[paramiko.Transport]) -> None:
    for t in reversed(transports):
        t.close()


def _where(params: ConnParams) -> str:
    return f"{params.user}@{params.host}:{params.port}"


def _open_transport(params: ConnParams, hops: list[paramiko.Transport]) -> paramiko.Transport:
    """Open the transport for ``params``; every transport opened is appended to ``hops``."""
    sock: Any
    if params.jump is not None:
        via = _open_transport(params.jump, hops)
        try:
            sock = via.open_channel(
                "direct-tcpip", (params.host, params.port), ("127.0.0.1", 0), timeout=params.connect_timeout
            )
        except paramiko.ChannelException as exc:
            raise ConnectError("unreachable", f"{_where(params)} via {params.jump.host}: {exc}") from None
    else:
        sock = socket.create_connection((params.host, params.port), timeout=params.connect_timeout)
    try:
        head = read_identification(sock, params.connect_timeout)
    except BannerError as exc:
        sock.close()
        raise ConnectError(exc.kind, f"{_where(params)}: {exc}") from None
    except BaseException:
        sock.close()
        raise
    # paramiko uses its socket by duck typing (recv, send, settimeout, close), as for a ProxyCommand.
    transport = paramiko.Transport(cast(socket.socket, Replay(sock, head)))
    transport.banner_timeout = params.connect_timeout
    transport.set_log_channel(PARAMIKO_LOG)
    hops.append(transport)
    algorithms = preferred_algorithms(params.hostkeys, params.host, params.port)
    if algorithms:
        options = transport.get_security_options()
        supported = [a for a in algorithms if a in options.key_types]
        if supported:
            options.key_types = supported
    transport.start_client(timeout=params.connect_timeout)
    key = transport.get_remote_server_key()
    if check_host_key(params.hostkeys, params.host, params.port, key):
        log.warning("trusted the new host key of %s as configured (accept_unknown_host_key)", _where(params))
    _authenticate(transport, params)
    if params.keepalive > 0:
        transport.set_keepalive(params.keepalive)
    return transport


def _authenticate(transport: paramiko.Transport, params: ConnParams) -> None:
    """Try identity files, then the agent; never passwords or passphrases."""
    tried: list[str] = []
    for path in params.identity_files:
        key = _load_key(path, tried)
        if key is not None and _try_key(transport, params.user, key):
            return
    if params.use_agent:
        for key in paramiko.Agent().get_keys():
            tried.append("an ssh-agent key")
            if _try_key(transport, params.user, key):
                return
    what = ", ".join(tried) if tried else "no usable key (no identity file, no ssh-agent key)"
    raise ConnectError("auth", f"{_where(params)}: public key authentication failed; tried {what}")


def _load_key(path: str, tried: list[str]) -> paramiko.PKey | None:
    try:
        key = paramiko.PKey.from_path(path)
    except FileNotFoundError:
        return None
    except paramiko.PasswordRequiredException:
        tried.append(f"{path} (encrypted: load it into ssh-agent)")
        return None
    except (paramiko.SSHException, OSError, ValueError) as exc:
        tried.append(f"{path} (unreadable: {type(exc).__name__})")
        return None
    tried.append(path)
    return key


def _try_key(transport: paramiko.Transport, user: str, key: paramiko.PKey) -> bool:
    try:
        transport.auth_publickey(user, key)
    except paramiko.AuthenticationException:
        return False
    return transport.is_authenticated()


def error_kind(exc: BaseException) -> str:
    """Map an exception from connecting or reading to an error kind label."""
    if isinstance(exc, ConnectError):
        return exc.kind
    if isinstance(exc, HostKeyRefused | paramiko.BadHostKeyException):
        return "host_key"
    if isinstance(exc, paramiko.AuthenticationException):
        return "auth"
    if isinstance(exc, FileNotFoundError):
        return "file_missing"
    if isinstance(exc, PermissionError):
        return "permission_denied"
    return "unreachable"


def _describe(exc: BaseException) -> str:
    """A one-line reason; key-loading exceptions can quote file contents, so keep to the type."""
    if isinstance(exc, HostKeyRefused):
        return str(exc)
    if isinstance(exc, socket.gaierror):
        return f"cannot resolve host ({exc.strerror})"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    text = str(exc) if isinstance(exc, paramiko.SSHException | EOFError) else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
