"""A real OpenSSH sshd on a free loopback port, with its own keys and config in tmp.

Never touches the system sshd: own host key, own sshd_config, own
authorized_keys and pid file; started with ``-D -e -f`` and killed (with its
per-connection children) by the fixture finalizer. Missing sshd fails under
CI=true and skips elsewhere.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from acceptmon.sources.ssh.options import SSHSettings
from tests.support.tools import free_port
from tests.support.wait import wait_for

SSHD = "/usr/sbin/sshd"
SSH_KEYGEN = shutil.which("ssh-keygen") or "/usr/bin/ssh-keygen"


def require_sshd() -> None:
    if os.path.exists(SSHD) and os.path.exists(SSH_KEYGEN):
        return
    pytest.fail(f"{SSHD} or ssh-keygen missing: `make test` installs them (scripts/system-deps.sh)")


def keygen(path: Path, kind: str = "ed25519") -> Path:
    subprocess.run([SSH_KEYGEN, "-q", "-t", kind, "-N", "", "-f", str(path)], check=True)
    return path


def key_fingerprint(pub: Path) -> str:
    """``SHA256:...`` as ``ssh-keygen -l`` prints it."""
    out = subprocess.run([SSH_KEYGEN, "-lf", str(pub)], check=True, capture_output=True, text=True).stdout
    return out.split()[1]


def _children(pid: int, depth: int = 99) -> list[int]:
    """Descendants of ``pid`` down to ``depth`` levels (per-connection sshd processes)."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        parents.setdefault(ppid, []).append(int(entry))
    out, todo = [], [(pid, 0)]
    while todo:
        parent, level = todo.pop()
        for child in parents.get(parent, []) if level < depth else []:
            out.append(child)
            todo.append((child, level + 1))
    return out


@dataclass
class SSHServer:
    """One test sshd; ``settings()`` gives an SSHSettings that reaches it as ``testhost``."""

    tmp: Path
    port: int
    listen: tuple[str, ...] = ("127.0.0.1",)
    proc: subprocess.Popen[bytes] | None = None
    pids: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.tmp.mkdir(parents=True, exist_ok=True)
        self.host_key = keygen(self.tmp / "host_ed25519")
        self.client_key = keygen(self.tmp / "client_ed25519")
        (self.tmp / "authorized_keys").write_text(Path(f"{self.client_key}.pub").read_text())
        self.known_hosts = self.tmp / "known_hosts"
        self.trust()
        self.ssh_config = self.tmp / "ssh_config"
        self.ssh_config.write_text(
            "Host testhost\n"
            f"  HostName 127.0.0.1\n  Port {self.port}\n  User {_user()}\n"
            f"  IdentityFile {self.client_key}\n  IdentitiesOnly yes\n"
            f"  UserKnownHostsFile {self.known_hosts}\n"
        )
        self.config = self.tmp / "sshd_config"
        listen = "".join(f"ListenAddress {a}\n" for a in self.listen)
        self.config.write_text(
            f"Port {self.port}\n{listen}HostKey {self.host_key}\nPidFile {self.tmp / 'sshd.pid'}\n"
            f"AuthorizedKeysFile {self.tmp / 'authorized_keys'}\n"
            "UsePAM no\nStrictModes no\nPermitRootLogin prohibit-password\n"
            "PasswordAuthentication no\nKbdInteractiveAuthentication no\n"
            "Subsystem sftp internal-sftp\nMaxStartups 200\nMaxSessions 200\nLogLevel ERROR\n"
        )

    @property
    def fingerprint(self) -> str:
        return key_fingerprint(Path(f"{self.host_key}.pub"))

    def trust(self, hosts: tuple[str, ...] | None = None) -> None:
        """Write known_hosts with this server's key for each listen address."""
        key = " ".join(Path(f"{self.host_key}.pub").read_text().split()[:2])
        names = hosts or self.listen
        self.known_hosts.write_text("".join(f"[{h}]:{self.port} {key}\n" for h in names))

    def settings(self, **overrides: object) -> SSHSettings:
        base: dict[str, object] = {
            "ssh_config": str(self.ssh_config),
            "poll_interval": 0.1,
            "backoff_base": 0.1,
            "backoff_cap": 2.0,
            "connect_timeout": 5.0,
            "io_timeout": 10.0,
            "settle": 0.2,
            "use_agent": False,
        }
        base.update(overrides)
        return SSHSettings(**base)  # type: ignore[arg-type]

    def start(self) -> None:
        run = Path("/run/sshd")  # privilege separation dir Debian's sshd insists on
        run.mkdir(mode=0o755, exist_ok=True)
        log = open(self.tmp / "sshd.log", "ab")  # noqa: SIM115 - closed with the process
        self.proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(self.config)], stderr=log, stdout=log)
        log.close()
        wait_for(self._banner, 10.0, f"sshd on port {self.port}")

    def _banner(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise AssertionError(f"sshd exited: {(self.tmp / 'sshd.log').read_text()[-2000:]}")
        try:
            with socket.create_connection((self.listen[0], self.port), timeout=1.0) as s:
                return s.recv(8).startswith(b"SSH-")
        except OSError:
            return False

    def connections(self) -> list[int]:
        """Every process serving a connection (monitor, session and sftp children)."""
        return _children(self.proc.pid) if self.proc else []

    def connection_count(self) -> int:
        """TCP connections: sshd forks one direct child per accepted connection."""
        return len(_children(self.proc.pid, depth=1)) if self.proc else 0

    def kill_connections(self) -> int:
        """SIGKILL every per-connection sshd process: the client sees the link die."""
        pids = self.connections()
        for pid in pids:
            _kill(pid)
        return len(pids)

    def stop(self) -> None:
        if self.proc is None:
            return
        children = self.connections()
        _kill(self.proc.pid)
        self.proc.wait(10)
        for pid in children:
            _kill(pid)
        self.proc = None

    def restart(self) -> None:
        self.stop()
        self.start()


def _user() -> str:
    import getpass

    return getpass.getuser()


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


@pytest.fixture
def sshd(tmp_path: Path) -> Iterator[SSHServer]:
    """A started sshd for one test."""
    require_sshd()
    server = SSHServer(tmp_path / "sshd", free_port())
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def sshd_stopped(tmp_path: Path) -> Iterator[SSHServer]:
    """A configured sshd the test starts itself (for unreachable → recovered)."""
    require_sshd()
    server = SSHServer(tmp_path / "sshd-later", free_port())
    try:
        yield server
    finally:
        server.stop()
