"""Small remote files the agent needs beside the log, fetched on the host's worker thread.

A run's snapshot needs the draft model's ``config.json`` and a source's
clock needs the host's ``/etc/localtime``; both live on the GPU host. Reading
them when the agent needs them would block ingestion (and, under the agent
lock, ``/metrics``) on the network. Instead the source's worker thread reads
them before it hands over the lines that need them — the zone at connect,
a draft config when a start line names one — on a separate SFTP channel with
its own deadline, and the agent only looks them up.
"""

from __future__ import annotations

import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import TypeVar

import paramiko

from acceptmon.log_time import LOCALTIME
from acceptmon.sources.ssh.connect import Connection
from acceptmon.sources.ssh.sftpfs import SFTPFS, listdir_attr

log = logging.getLogger(__name__)

_V = TypeVar("_V")

#: How long one remote file read may take before it is given up (seconds).
FETCH_DEADLINE = 10.0

#: Where a start line names the draft model: ``…=ServerArgs(… speculative_draft_model_path='/m', …)``
#: and the dict form ``'speculative_draft_model_path': '/m'``. A hint only: the parser decides.
_DRAFT_PATH = re.compile(r"speculative_draft_model_path'?\s{0,4}[=:]\s{0,4}(['\"])([^'\"\n]{1,4096})\1")

#: Remote files remembered (a few per draft model, plus the zone).
_MEMORY = 64

#: Lists a remote directory's snapshots' config.json files, newest first.
RemoteSnapshots = Callable[[str], list[str]]
#: Where a draft model's config.json may be, most likely first, given a way to list the
#: remote HF cache (``runs.draft_config.candidates``, injected by the agent).
Candidates = Callable[[str, RemoteSnapshots], list[str]]


def read_over(conn: Connection, path: str, max_bytes: int, deadline: float = FETCH_DEADLINE) -> bytes | None:
    """The file's bytes over a fresh SFTP channel of ``conn``; None if missing, unreadable or too big."""
    sftp: paramiko.SFTPClient | None = None
    try:
        sftp = paramiko.SFTPClient.from_transport(conn.transport)
        if sftp is None:
            return None
        channel = sftp.get_channel()
        if channel is not None:
            channel.settimeout(deadline)
        data = SFTPFS(sftp).read_small(path, max_bytes)
        if data is None:
            log.warning("remote file %s is larger than %d bytes; not read", path, max_bytes)
        return data
    except Exception as exc:  # a missing or hung config.json must not stop tailing
        log.warning(
            "cannot read remote file %s: %s", path, getattr(exc, "strerror", None) or type(exc).__name__
        )
        return None
    finally:
        if sftp is not None:
            sftp.close()


def snapshots_over(conn: Connection, directory: str) -> list[str]:
    """``<directory>/<snapshot>/config.json`` for each snapshot on the remote host, newest first."""
    sftp: paramiko.SFTPClient | None = None
    try:
        sftp = paramiko.SFTPClient.from_transport(conn.transport)
        if sftp is None:
            return []
        channel = sftp.get_channel()
        if channel is not None:
            channel.settimeout(FETCH_DEADLINE)
        entries = sorted(listdir_attr(sftp, directory), key=lambda e: e.st_mtime or 0, reverse=True)
        return [f"{directory}/{e.filename}/config.json" for e in entries]
    except Exception:  # no cache there, or unreadable: the other candidates remain
        return []
    finally:
        if sftp is not None:
            sftp.close()


def draft_paths(lines: list[str]) -> list[str]:
    """Draft model paths named by start lines among ``lines`` (cheap: most lines skip at once)."""
    out = []
    for line in lines:
        if "speculative_draft_model_path" not in line:
            continue
        m = _DRAFT_PATH.search(line)
        if m is not None:
            out.append(m.group(2))
    return out


class RemoteFiles:
    """Fetched remote files by path; written by the worker thread, read by the agent without blocking."""

    def __init__(self, candidates: Candidates | None = None, max_bytes: int = 1 << 20) -> None:
        self._candidates = candidates
        self._max_bytes = max_bytes
        self._files: OrderedDict[str, bytes | None] = OrderedDict()
        self._drafts: OrderedDict[str, tuple[str, bytes] | None] = OrderedDict()
        self._lock = threading.Lock()
        self.zone_fetched = False

    def get(self, path: str) -> bytes | None:
        """What was fetched for ``path``; None if missing or never fetched (never blocks)."""
        with self._lock:
            return self._files.get(path)

    def draft(self, draft_path: str) -> tuple[str, bytes] | None:
        """The config.json last fetched for a draft model (the file it was found in, its bytes)."""
        with self._lock:
            return self._drafts.get(draft_path)

    def _put(self, path: str, data: bytes | None) -> None:
        with self._lock:
            _remember(self._files, path, data)

    def _put_draft(self, draft_path: str, found: tuple[str, bytes] | None) -> None:
        with self._lock:
            _remember(self._drafts, draft_path, found)

    def fetch_zone(self, conn: Connection) -> None:
        """The host's /etc/localtime, once, before the first line is handed over."""
        if not self.zone_fetched:
            self._put(LOCALTIME, read_over(conn, LOCALTIME, 1 << 20))
            self.zone_fetched = True

    def fetch_drafts(self, conn: Connection, lines: list[str]) -> None:
        """Re-read the config.json of every draft model these lines start (it may have changed)."""
        if self._candidates is None:
            return
        for draft in draft_paths(lines):
            found = None
            for path in self._candidates(draft, lambda d: snapshots_over(conn, d)):
                data = read_over(conn, path, self._max_bytes)
                if data is not None:
                    found = (path, data)
                    break
            self._put_draft(draft, found)


def _remember(memory: OrderedDict[str, _V], key: str, value: _V) -> None:
    memory[key] = value
    memory.move_to_end(key)
    while len(memory) > _MEMORY:
        memory.popitem(last=False)
