"""``ssh://[user@]host[:port]/absolute/path-or-glob`` → its parts (pure).

The host part may be an alias from ``~/.ssh/config``; user and port are left
``None`` when the URL does not give them so that the SSH config can fill them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from acceptmon.text.redact import redact_text

_GLOB_CHARS = frozenset("*?[")
#: ``host``, ``host:port`` or ``[v6]:port`` (the port's range is urlsplit's to check).
_HOSTPORT = re.compile(r"(\[[0-9A-Za-z:.%]*\]|[^\[\]:]*)(:[0-9]*)?")


class SSHURLError(ValueError):
    """An ``ssh://`` source that cannot be followed (a configuration error)."""


@dataclass(frozen=True, slots=True)
class SSHTarget:
    """What an ``ssh://`` URL names: a host (or alias) and a remote path or glob."""

    host: str
    path: str
    user: str | None = None
    port: int | None = None

    @property
    def is_glob(self) -> bool:
        return any(c in _GLOB_CHARS for c in self.path)

    def url(self) -> str:
        user = f"{self.user}@" if self.user else ""
        host = f"[{self.host}]" if ":" in self.host else self.host
        port = f":{self.port}" if self.port is not None else ""
        return f"ssh://{user}{host}{port}{self.path}"


def parse_ssh_url(url: str) -> SSHTarget:
    """Parse an ``ssh://`` source URL; raise ``SSHURLError`` saying what is wrong."""
    shown = repr(redact_text(url))  # a password typed into the URL is never echoed
    try:
        parts = urlsplit(url)
    except ValueError as exc:  # e.g. an unclosed IPv6 bracket
        raise SSHURLError(f"{shown}: {exc}; an IPv6 address goes in brackets: ssh://[::1]:22/path") from None
    if parts.scheme != "ssh" or not url.startswith("ssh://"):
        raise SSHURLError(f"{shown}: not an ssh:// URL")
    if parts.password is not None:
        raise SSHURLError(f"{shown}: passwords in URLs are not supported; use keys or ssh-agent")
    if parts.query or parts.fragment:
        raise SSHURLError(f"{shown}: unexpected '?' or '#' part")
    hostport = parts.netloc.rpartition("@")[2]
    if not _HOSTPORT.fullmatch(hostport):
        raise SSHURLError(
            f"{shown}: bad host or port: expected host, host:PORT or [IPv6]:PORT "
            "with PORT a number from 1 to 65535"
        )
    try:
        host = parts.hostname
        port = parts.port
    except ValueError:
        raise SSHURLError(f"{shown}: bad port: expected a number from 1 to 65535") from None
    if not host:
        raise SSHURLError(f"{shown}: no host")
    if port == 0:
        raise SSHURLError(f"{shown}: bad port: expected a number from 1 to 65535")
    path = unquote(parts.path)
    if not path.startswith("/") or path == "/":
        raise SSHURLError(f"{shown}: the remote path must be absolute, e.g. ssh://host/var/log/app.log")
    segments = path.split("/")
    if segments[1].startswith("~") or ".." in segments:
        raise SSHURLError(f"{shown}: the remote path must be absolute, without '~' or '..'")
    if any(ord(c) < 32 or c == "\x7f" for c in path):
        raise SSHURLError(f"{shown}: control characters in the remote path")
    if any(c in _GLOB_CHARS for c in path.rsplit("/", 1)[0]):
        raise SSHURLError(f"{shown}: glob characters are only supported in the file name")
    user = unquote(parts.username) if parts.username else None
    return SSHTarget(host=host, path=path, user=user, port=port)
