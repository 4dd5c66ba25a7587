"""Read one small remote file (a draft model's ``config.json``) over a source's connection.

The run tracker needs the draft model's config to tell a config change from
noise; the log only names its path, which lives on the GPU host. A separate
SFTP channel on the already-open transport keeps this off the tailing
session and costs no new login.
"""

from __future__ import annotations

import logging

from acceptmon.sources.ssh import SSHSource
from acceptmon.sources.ssh.connect import ConnectError, Connection, connect
from acceptmon.sources.ssh.fetch import read_over
from acceptmon.sources.ssh.options import SSHSettings, resolve
from acceptmon.sources.ssh.url import SSHTarget, parse_ssh_url
from acceptmon.sources.ssh.worker import DEFAULT_POOL, HostPool

log = logging.getLogger(__name__)


def read_remote_file(
    source_or_host: SSHSource | str,
    path: str,
    max_bytes: int,
    *,
    settings: SSHSettings | None = None,
    pool: HostPool | None = None,
) -> bytes | None:
    """The file's bytes, or None if unreachable, missing, unreadable or over ``max_bytes``.

    ``source_or_host`` is an ``SSHSource`` or a host as a URL
    (``ssh://user@host:port``) or an SSH config alias.
    """
    conn, temporary = _connection(source_or_host, settings, pool or DEFAULT_POOL)
    if conn is None:
        return None
    try:
        return read_over(conn, path, max_bytes)
    finally:
        if temporary:
            conn.close()


def _connection(
    source_or_host: SSHSource | str, settings: SSHSettings | None, pool: HostPool
) -> tuple[Connection | None, bool]:
    if isinstance(source_or_host, SSHSource):
        worker = source_or_host.worker
        return (worker.connection() if worker is not None else None), False
    text = source_or_host if "://" in source_or_host else f"ssh://{source_or_host}"
    target = parse_ssh_url(text.rstrip("/") + "/.")
    settings = settings or SSHSettings()
    params = resolve(SSHTarget(target.host, "/", target.user, target.port), settings)
    worker = pool.find(params.key)
    shared = worker.connection() if worker is not None else None
    if shared is not None:
        return shared, False
    try:
        return connect(params, settings.io_timeout), True
    except ConnectError as exc:
        log.warning("cannot read remote files from %s (%s): %s", source_or_host, exc.kind, exc)
        return None, False
