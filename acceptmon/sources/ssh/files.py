"""``ssh://`` SOURCEs read once over SFTP (``acceptmon oneshot``, ``runs``, ``report``, ...), as the agent reaches them.

The agent's rules apply: ``~/.ssh/config`` (or ``--ssh-config``), strict
host-key checking against known_hosts, keys or ssh-agent, ProxyJump. A glob
in the path names files on the remote host; rotations join their log, oldest
first, compressed ones decompressed on the fly. Nothing runs on the host.
"""

from __future__ import annotations

import fnmatch
import logging
import posixpath
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import IO, cast

from acceptmon.sources.base import MAX_CONFIG_BYTES
from acceptmon.sources.files import InputError, Log
from acceptmon.sources.lines import Readable
from acceptmon.sources.rotation import decompressed, group_rotations, readable
from acceptmon.sources.ssh.connect import ConnectError, Connection, connect
from acceptmon.sources.ssh.fetch import read_over
from acceptmon.sources.ssh.options import SSHSettings, resolve
from acceptmon.sources.ssh.sftpfs import listdir_attr, remote_bytes
from acceptmon.sources.ssh.url import SSHURLError, parse_ssh_url

log = logging.getLogger("acceptmon.runs")


@dataclass
class RemoteLogs:
    """The logs one ``ssh://`` SOURCE names (opened through this connection), and the connection."""

    conn: Connection
    logs: list[Log] = field(default_factory=list)

    @contextmanager
    def open(self, path: str) -> Iterator[Readable]:
        with self.conn.sftp.open(remote_bytes(path), "rb") as f:
            f.prefetch()
            # paramiko's file reads and seeks as the codecs need; its stubs do not say IO[bytes].
            with decompressed(cast(IO[bytes], f), path) as stream:
                yield stream

    def read_file(self, path: str) -> bytes | None:
        """A small file beside the log (a draft config.json), or None."""
        return read_over(self.conn, path, MAX_CONFIG_BYTES)

    def close(self) -> None:
        self.conn.close()


def open_remote(source: str, ssh_config: str | None = None) -> RemoteLogs:
    """Connect and list what ``source`` names; raises InputError with a one-line reason."""
    try:
        target = parse_ssh_url(source)
        settings = SSHSettings(ssh_config=ssh_config) if ssh_config else SSHSettings()
        conn = connect(resolve(target, settings), settings.io_timeout)
    except (SSHURLError, ConnectError) as exc:
        raise InputError(str(exc)) from None
    remote = RemoteLogs(conn)
    try:
        directory, pattern = posixpath.split(target.path)
        if not target.is_glob:
            conn.sftp.stat(remote_bytes(target.path))
            remote.logs = [Log(source, (target.path,), remote.open, url=source)]
            return remote
        entries = {e.filename: e for e in listdir_attr(conn.sftp, directory)}
        names = sorted(n for n in entries if fnmatch.fnmatchcase(n, pattern) and _readable(directory, n))
        if not names:
            raise InputError(f"{source}: matches no file")
        prefix = source[: len(source) - len(posixpath.basename(source))]
        paths = [posixpath.join(directory, n) for n in names]
        groups = group_rotations(paths, lambda p: entries[posixpath.basename(p)].st_mtime or 0)
        urls = [prefix + posixpath.basename(base) for base, _ in groups]
        remote.logs = [
            Log(url, files, remote.open, url=url) for url, (_, files) in zip(urls, groups, strict=True)
        ]
        return remote
    except InputError:
        conn.close()
        raise
    except OSError as exc:
        conn.close()
        raise InputError(f"{source}: {exc.strerror or type(exc).__name__}") from None


def _readable(directory: str, name: str) -> bool:
    if readable(name):
        return True
    log.warning("%s: cannot decompress this format; skipped", posixpath.join(directory, name))
    return False
