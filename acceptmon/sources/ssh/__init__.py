"""``ssh://[user@]host[:port]/path-or-glob`` as a first-class line source.

The same guarantees as a local file (no loss, no duplicates across rotation,
truncation, reconnects and restarts) over plain SFTP: no remote process runs,
so a dropped connection leaves nothing behind on the host. Reading happens on
the host's shared worker thread (``ssh_worker``); ``poll()`` only drains a
bounded buffer, so it never blocks, whatever the network does.
"""

from __future__ import annotations

import dataclasses
import logging
import posixpath
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from acceptmon.clock import Clock, SystemClock
from acceptmon.model import Chunk, Position
from acceptmon.sources.base import SourceHealth
from acceptmon.sources.health import SourceEvents
from acceptmon.sources.ssh.buffer import ChunkBuffer
from acceptmon.sources.ssh.connect import Connection, error_kind
from acceptmon.sources.ssh.fetch import Candidates, RemoteFiles
from acceptmon.sources.ssh.follow import Cursor, Follower, Known
from acceptmon.sources.ssh.names import glob_matches
from acceptmon.sources.ssh.options import SSHSettings, resolve
from acceptmon.sources.ssh.url import parse_ssh_url
from acceptmon.sources.ssh.worker import DEFAULT_POOL, HostPool, HostWorker
from acceptmon.sources.tail.entry import Entry, ssh_files_of
from acceptmon.sources.tail.fs import FileSystem, HeadHash
from acceptmon.statefiles import CHECKPOINT_VERSION
from acceptmon.text.printable import printable

log = logging.getLogger("acceptmon.sources.ssh")

#: Fingerprints remembered for files whose chunks may still be committed.
_FP_MEMORY = 64


class SSHSource:
    """A remote file (or glob) followed over SFTP; see ``acceptmon.sources.base.Source``."""

    def __init__(
        self,
        name: str,
        url: str,
        settings: SSHSettings | None = None,
        *,
        pool: HostPool | None = None,
        clock: Clock | None = None,
        draft_candidates: Candidates | None = None,
    ) -> None:
        """``draft_candidates`` says where a start line's draft config.json may be: those
        files are fetched before the chunk is handed over (None: fetch none)."""
        self.name = name
        self.settings = settings or SSHSettings()
        self.target = parse_ssh_url(url)
        self.params = resolve(self.target, self.settings)
        self._pool = pool or DEFAULT_POOL
        self._clock = clock or SystemClock()
        self._buffer = ChunkBuffer(self.settings.buffer_bytes)
        self._health = SourceEvents(name, log, host_up=False)
        self._lock = threading.Lock()
        #: Per handed-out identity: the entry for its file as it was when last emitted from.
        self._fps: OrderedDict[str, Entry] = OrderedDict()
        self._state: dict[str, Entry] = {}
        #: Per path: rotated files older than what it reads (``Follower.known``).
        self._known: dict[str, Known] = {}
        self._followers: dict[str, Follower] = {}
        self._next_glob = 0.0
        self._worker: HostWorker | None = None
        self._conn: Connection | None = None
        #: Files beside the log (zone, draft configs), fetched before the lines that need them.
        self.remote_files = RemoteFiles(draft_candidates)
        self._closed = False
        if not self.target.is_glob:
            self._add(self.target.path)

    # -- Source protocol (consumer thread) -------------------------------------------------

    def poll(self) -> list[Chunk]:
        if self._worker is None and not self._closed:
            self._worker = self._pool.acquire(self.params, self.settings, self)
        chunks, was_full = self._buffer.drain()
        if was_full and self._worker is not None:
            self._worker.wake()
        return chunks

    def commit(self, chunk: Chunk) -> None:
        if chunk.end is None:
            return
        with self._lock:
            emitted = self._fps.get(chunk.end.identity)
            if emitted is None:
                return
            lineno = chunk.lineno + len(chunk.lines)
            self._state[chunk.path] = dataclasses.replace(emitted, offset=chunk.end.offset, lineno=lineno)

    def checkpoint(self) -> dict[str, Any]:
        """The local sources' shape: per path, its files read to the end (``done``, here the
        rotated heads that are history) and the one it reads (``streams``)."""
        with self._lock:
            paths = [*self._state, *(p for p in self._known if p not in self._state)]
            files = {
                p: {
                    "done": {str(HeadHash.of(fp)): [fp, n] for fp, n in self._known.get(p, ())},
                    "streams": [self._state[p].to_json()] if p in self._state else [],
                }
                for p in paths
            }
            return {"url": self.target.url(), "version": CHECKPOINT_VERSION, "files": files}

    def restore(self, state: dict[str, Any]) -> None:
        """Resume from ``checkpoint()`` output (or an older SSH document); call before the first ``poll()``."""
        parts = ssh_files_of(state)
        with self._lock:
            self._state, self._known = {}, {}
            for path, part in parts.items():
                streams = part["streams"] if isinstance(part["streams"], list) else []
                entries = [e for e in map(Entry.from_json, streams) if e is not None]
                if entries:
                    self._state[path] = entries[-1]
                self._known[path] = _known_of(part["done"])
            for follower in self._followers.values():
                self._resume(follower)

    def health(self) -> SourceHealth:
        with self._lock:
            followers = list(self._followers.values())
        lag, overlong = sum(f.lag for f in followers), sum(f.overlong for f in followers)
        return self._health.snapshot(up=True, lag=lag, files=len(followers), overlong=overlong)

    def close(self) -> None:
        self._closed = True
        if self._worker is not None:
            self._pool.release(self._worker, self)
            self._worker = None

    @property
    def worker(self) -> HostWorker | None:
        return self._worker

    # -- HostClient (worker thread) --------------------------------------------------------

    def work(self, fs: FileSystem, alive: Callable[[], bool], conn: Connection | None = None) -> bool:
        self._conn = conn
        if conn is not None:
            self.remote_files.fetch_zone(conn)
        if self.target.is_glob and self._clock.monotonic() >= self._next_glob:
            self._expand(fs)
        more = False
        for follower in list(self._followers.values()):
            if self._buffer.room() <= 0:
                break
            try:
                more = follower.step(fs) or more
            except (FileNotFoundError, PermissionError) as exc:
                self._health.problem(follower.path, error_kind(exc), f"{follower.path}: {exc.strerror}")
                continue
            except Exception as exc:
                if not alive():
                    raise
                self._health.problem(follower.path, "io", f"{follower.path}: {type(exc).__name__} {exc}")
                continue
            self._health.ok(follower.path)
        return more

    def host_state(self, up: bool, kind: str, message: str) -> None:
        self._health.host(up, kind, message)

    def reconnected(self) -> None:
        for follower in self._followers.values():
            follower.resync()

    # -- Sink (worker thread, via Follower) ------------------------------------------------

    def room(self) -> int:
        return self._buffer.room()

    def emit(self, path: str, lines: list[str], lineno: int, end: Position, cursor: Cursor) -> None:
        with self._lock:
            self._fps[end.identity] = cursor.entry()
            self._fps.move_to_end(end.identity)
            while len(self._fps) > _FP_MEMORY:
                self._fps.popitem(last=False)
        self._health.read(sum(map(len, lines)) + len(lines))
        if self._conn is not None:
            self.remote_files.fetch_drafts(self._conn, lines)
        source = printable(f"{self.name}:{posixpath.basename(path)}") if self.target.is_glob else self.name
        self._buffer.put(Chunk(source, tuple(lines), lineno, end, path))

    def note(self, event: str, detail: str) -> None:
        """A rotation, an in-place truncation, or a file gone before its end (``lost``)."""
        if event == "lost":
            self._health.lost(detail)
            return
        if event == "rotation":
            self._health.rotated()
        elif event == "truncation":
            self._health.truncated()
        log.debug("%s: %s", self.name, detail)

    def known(self, path: str, heads: Known) -> None:
        with self._lock:
            self._known[path] = heads

    # -- files -----------------------------------------------------------------------------

    def _add(self, path: str) -> None:
        s = self.settings
        follower = Follower(path, self, self._clock, settle=s.settle, step_bytes=s.step_bytes)
        with self._lock:
            self._resume(follower)
            self._followers[path] = follower

    def _resume(self, follower: Follower) -> None:
        entry = self._state.get(follower.path)
        if entry is not None:
            follower.restore(entry)
        if follower.path in self._known:
            follower.known = self._known[follower.path]

    def _expand(self, fs: FileSystem) -> None:
        """Follow new glob matches; drop vanished ones once nothing is left to read."""
        self._next_glob = self._clock.monotonic() + self.settings.glob_interval
        directory, pattern = posixpath.split(self.target.path)
        try:
            names = [e.name for e in fs.listdir(directory)]
        except (FileNotFoundError, PermissionError) as exc:
            self._health.problem(self.target.path, error_kind(exc), f"{directory}: {exc.strerror}")
            return
        self._health.ok(self.target.path)
        matches = {posixpath.join(directory, n) for n in glob_matches(pattern, names)}
        for path in sorted(matches - self._followers.keys()):
            self._add(path)
        for path in list(self._followers.keys() - matches):
            if self._followers[path].idle:
                with self._lock:
                    del self._followers[path]
                    self._state.pop(path, None)
                    self._known.pop(path, None)
                self._health.forget(path)


def _known_of(raw: Any) -> Known:
    """A path's ``done`` files as the heads that are history; what is malformed is left out."""
    heads = raw.values() if isinstance(raw, dict) else []
    return tuple((h[0], h[1]) for h in heads if _is_head(h))


def _is_head(h: Any) -> bool:
    return isinstance(h, list) and len(h) == 2 and isinstance(h[0], str) and type(h[1]) is int and h[1] > 0
