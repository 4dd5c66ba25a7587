"""Strict host key checking against an OpenSSH ``known_hosts`` file.

Unknown and changed keys are refused with a message that shows the key type
and its ``SHA256:`` fingerprint (as ``ssh-keygen -l`` prints it) and the exact
command that trusts it, because "host key verification failed" alone sends
people to ``StrictHostKeyChecking=no``. An unknown key is accepted only when
the configuration says so for that host, and is then written to the file, so
a later change is still refused.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass

import paramiko
from paramiko.hostkeys import HostKeyEntry, InvalidHostKey

#: Host key algorithms paramiko may negotiate for a key type named in known_hosts.
_ALGORITHMS = {
    "ssh-rsa": ("rsa-sha2-512", "rsa-sha2-256", "ssh-rsa"),
}


class HostKeyRefused(Exception):
    """The server's host key is unknown or changed; ``str()`` says how to fix it."""

    kind = "host_key"


@dataclass(frozen=True, slots=True)
class HostKeyPolicy:
    """Where known keys live and whether an unknown key may be added."""

    known_hosts: str
    accept_unknown: bool = False


def fingerprint(key: paramiko.PKey) -> str:
    """OpenSSH-style ``SHA256:base64`` fingerprint (no padding)."""
    digest = hashlib.sha256(key.asbytes()).digest()
    return "SHA256:" + base64.b64encode(digest).decode("ascii").rstrip("=")


def known_name(host: str, port: int) -> str:
    """The name a host has in known_hosts (``[host]:port`` off port 22)."""
    return host if port == 22 else f"[{host}]:{port}"


def load_known(path: str) -> paramiko.HostKeys:
    """Read known_hosts; a missing file simply knows no hosts. A corrupted line refuses the
    connection with the file and line named (paramiko would only say ``UnicodeDecodeError``)."""
    keys = paramiko.HostKeys()
    if os.path.exists(path):
        try:
            keys.load(path)
        except (UnicodeDecodeError, InvalidHostKey):
            raise HostKeyRefused(_corrupted_message(path)) from None
    return keys


def _corrupted_message(path: str) -> str:
    """Which line of ``path`` is not a known_hosts entry (never its text: it may be anything)."""
    lineno = 0
    with contextlib.suppress(OSError), open(path, "rb") as f:
        for lineno, raw in enumerate(f, 1):
            try:
                line = raw.decode("utf-8").strip()
                if line and not line.startswith("#"):
                    HostKeyEntry.from_line(line, lineno)
            except (UnicodeDecodeError, InvalidHostKey):
                break
    return (
        f"{path} line {lineno}: corrupted (not a known_hosts entry); host keys cannot be checked. "
        f"Fix or delete that line (e.g. `sed -i '{lineno}d' {shlex.quote(path)}`), then trust the "
        "host again"
    )


def preferred_algorithms(policy: HostKeyPolicy, host: str, port: int) -> tuple[str, ...]:
    """Algorithms to offer first so the server shows the key type we already know."""
    entry = load_known(policy.known_hosts).lookup(known_name(host, port))
    if not entry:
        return ()
    out: list[str] = []
    for keytype in entry:
        out.extend(_ALGORITHMS.get(keytype, (keytype,)))
    return tuple(out)


def check_host_key(policy: HostKeyPolicy, host: str, port: int, key: paramiko.PKey) -> bool:
    """Return True if the key was newly trusted; raise ``HostKeyRefused`` if refused."""
    name = known_name(host, port)
    entry = load_known(policy.known_hosts).lookup(name)
    if entry:
        known = entry.get(key.get_name())
        if known is not None and known.asbytes() == key.asbytes():
            return False
        raise HostKeyRefused(_changed_message(policy, host, port, key, entry))
    if not policy.accept_unknown:
        raise HostKeyRefused(_unknown_message(policy, host, port, key))
    _append(policy.known_hosts, name, key)
    return True


def _append(path: str, name: str, key: paramiko.PKey) -> None:
    parent = os.path.dirname(path)
    if parent:
        os.makedirs(parent, mode=0o700, exist_ok=True)
    with open(path, "a", encoding="ascii") as f:
        f.write(f"{name} {key.get_name()} {key.get_base64()}\n")


def _short_type(key: paramiko.PKey) -> str:
    name = key.get_name()
    if name.startswith("ecdsa"):
        return "ecdsa"
    return name.removeprefix("ssh-")


def _keyscan(policy: HostKeyPolicy, host: str, port: int, key: paramiko.PKey) -> str:
    port_opt = f"-p {port} " if port != 22 else ""
    target = shlex.quote(policy.known_hosts)
    return f"ssh-keyscan {port_opt}-t {_short_type(key)} {host} >> {target}"


def _unknown_message(policy: HostKeyPolicy, host: str, port: int, key: paramiko.PKey) -> str:
    return (
        f"host key of {known_name(host, port)} is not known: {key.get_name()} {fingerprint(key)}. "
        f"Check that fingerprint on the host (ssh-keygen -lf /etc/ssh/ssh_host_*_key.pub), then "
        f"add it to the known_hosts file named in the config: `{_keyscan(policy, host, port, key)}` "
        f"(or set accept_unknown_host_key: true for this host)"
    )


def _changed_message(
    policy: HostKeyPolicy, host: str, port: int, key: paramiko.PKey, entry: Mapping[str, paramiko.PKey]
) -> str:
    known = ", ".join(f"{t} {fingerprint(k)}" for t, k in entry.items())
    name = known_name(host, port)
    return (
        f"host key of {name} CHANGED: the server offers {key.get_name()} {fingerprint(key)} but "
        f"{policy.known_hosts} has {known}. Refusing to connect (possible man-in-the-middle). If the "
        f"host was reinstalled, check the new fingerprint on it, then run "
        f"`ssh-keygen -R {shlex.quote(name)} -f {shlex.quote(policy.known_hosts)}` and "
        f"`{_keyscan(policy, host, port, key)}`"
    )
