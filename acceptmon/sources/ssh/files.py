"""``ssh://`` SOURCEs for ``acceptmon runs``: read once over SFTP, as the agent would reach them.

The agent's rules apply: ``~/.ssh/config`` (or ``--ssh-config``), strict
host-key checking against known_hosts, keys or ssh-agent, ProxyJump. A glob
in the path names files on the remote host; rotations join their log, oldest
first, compressed ones decompressed on the fly. Nothing runs on the host.
"""

from __future__ import annotations

import bz2
import fnmatch
import gzip
import lzma
import posixpath
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import IO, cast

from acceptmon.sources.base import MAX_CONFIG_BYTES, FileReader
from acceptmon.sources.files import InputError, Log, expand, plain_name, rotation_groups
from acceptmon.sources.ssh.connect import ConnectError, Connection, connect
from acceptmon.sources.ssh.fetch import read_over
from acceptmon.sources.ssh.options import SSHSettings, resolve
from acceptmon.sources.ssh.sftpfs import listdir_attr, remote_bytes
from acceptmon.sources.ssh.url import SSHURLError, parse_ssh_url

#: One SFTP read; paramiko pipelines requests within it.
READ_BYTES = 1 << 20


@dataclass
class RemoteLogs:
    """The logs one ``ssh://`` SOURCE names, and the open connection that reads them."""

    conn: Connection
    logs: list[Log]

    @contextmanager
    def open(self, path: str) -> Iterator[IO[bytes]]:
        with self.conn.sftp.open(remote_bytes(path), "rb") as f:
            f.prefetch()
            raw = cast(IO[bytes], f)
            ext = posixpath.splitext(path)[1].lower()
            if ext == ".gz":
                with gzip.GzipFile(fileobj=raw) as g:
                    yield cast(IO[bytes], g)
            elif ext == ".bz2":
                with bz2.BZ2File(raw) as b:
                    yield cast(IO[bytes], b)
            elif ext in (".xz", ".lzma"):
                with lzma.LZMAFile(raw) as x:
                    yield cast(IO[bytes], x)
            else:
                yield raw

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
    try:
        directory, pattern = posixpath.split(target.path)
        if not target.is_glob:
            conn.sftp.stat(remote_bytes(target.path))
            return RemoteLogs(conn, [Log(source, (target.path,), url=source)])
        entries = {e.filename: e for e in listdir_attr(conn.sftp, directory)}
        names = sorted(n for n in entries if fnmatch.fnmatchcase(n, pattern) and _readable(n))
        if not names:
            raise InputError(f"{source}: matches no file")
        return RemoteLogs(
            conn, _group(source, directory, names, {n: entries[n].st_mtime or 0 for n in names})
        )
    except InputError:
        conn.close()
        raise
    except OSError as exc:
        conn.close()
        raise InputError(f"{source}: {exc.strerror or type(exc).__name__}") from None


def _readable(name: str) -> bool:
    return plain_name(name) == name or posixpath.splitext(name)[1].lower() in (".gz", ".bz2", ".xz", ".lzma")


def _group(source: str, directory: str, names: list[str], mtime: dict[str, int]) -> list[Log]:
    prefix = source[: len(source) - len(posixpath.basename(source))]
    paths = [posixpath.join(directory, n) for n in names]
    groups = rotation_groups(paths, lambda p: mtime[posixpath.basename(p)])
    urls = [prefix + posixpath.basename(base) for base, _ in groups]
    return [Log(url, files, url=url) for url, (_, files) in zip(urls, groups, strict=True)]


@contextmanager
def opened(
    sources: list[str], ssh_config: str | None = None
) -> Iterator[tuple[list[Log], dict[str, FileReader]]]:
    """Every SOURCE as logs (local or over SFTP) and the remote logs' file readers; InputError
    when one names nothing readable. Connections close on exit."""
    logs: list[Log] = []
    remotes: list[RemoteLogs] = []
    try:
        for source in sources:
            if source.startswith("ssh://"):
                remote = open_remote(source, ssh_config)
                remotes.append(remote)
                logs += [replace(lg, opener=remote.open) for lg in remote.logs]
            else:
                logs += expand(source)
        yield logs, {lg.name: r.read_file for r in remotes for lg in r.logs}
    finally:
        for remote in remotes:
            remote.close()
