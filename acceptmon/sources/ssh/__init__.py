"""``ssh://[user@]host[:port]/path-or-glob`` as a first-class line source.

The same guarantees as a local file (no loss, no duplicates across rotation,
truncation, reconnects and restarts) over plain SFTP: no remote process runs,
so a dropped connection leaves nothing behind on the host. Reading happens on
the host's shared worker thread (``ssh_worker``); ``poll()`` only drains a
bounded buffer, so it never blocks, whatever the network does. Files are
followed by the local sources' follower (``tail/follower.py``) over a
filesystem that outlives connections (``ssh/reattach.py``).
"""

from __future__ import annotations

import dataclasses
import logging
import posixpath
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from acceptmon.clock import Clock, SystemClock
from acceptmon.model import Chunk
from acceptmon.sources.base import SourceHealth
from acceptmon.sources.health import SourceEvents
from acceptmon.sources.lines import MAX_LINE_BYTES
from acceptmon.sources.ssh.buffer import ChunkBuffer
from acceptmon.sources.ssh.connect import Connection
from acceptmon.sources.ssh.fetch import Candidates, RemoteFiles
from acceptmon.sources.ssh.names import glob_matches
from acceptmon.sources.ssh.options import SSHSettings, resolve
from acceptmon.sources.ssh.reattach import Disconnected, ReattachingFS
from acceptmon.sources.ssh.url import parse_ssh_url
from acceptmon.sources.ssh.worker import DEFAULT_POOL, HostPool, HostWorker
from acceptmon.sources.tail.entry import Entry, ssh_files_of
from acceptmon.sources.tail.follower import Emitted, FollowSettings, PathFollower
from acceptmon.sources.tail.fs import FileSystem
from acceptmon.sources.tail.stream import FileStream
from acceptmon.statefiles import CHECKPOINT_VERSION
from acceptmon.text.printable import printable

log = logging.getLogger("acceptmon.sources.ssh")

#: One SFTP read request asks for this much (paramiko's own request size).
READ_BYTES = 32 * 1024

#: A path's checkpoint part before it is JSON: its done files, and each entry with its open stream.
Part = tuple[dict[str, Any], list[tuple[FileStream | None, Entry]]]


class SSHSource:
    """A remote file (or glob) followed over SFTP; see ``acceptmon.sources.base.Source``.

    The followers belong to the worker thread. The consumer's commits are
    queued (``_acked``) and applied by the worker, which after each round
    publishes what a checkpoint needs (``_parts``) under ``_lock``; so
    ``commit`` and ``checkpoint`` never wait for the network.
    """

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
        self._fs = ReattachingFS()
        self._cfg = FollowSettings(
            name, self._fs, self._clock, READ_BYTES, self.settings.settle, MAX_LINE_BYTES
        )
        self._lock = threading.Lock()
        #: Held by a worker round: ``close`` waits for it before closing the files.
        self._working = threading.Lock()
        self._followers: dict[str, PathFollower] = {}
        #: Checkpoint parts of paths not resumed yet (resuming reads files: the worker's job).
        self._restored: dict[str, dict[str, Any]] = {}
        self._pending: deque[Emitted] = deque()
        self._acked: dict[FileStream, tuple[int, int]] = {}
        self._parts: dict[str, Part] = {}
        self._numbers = (0, 0, 0)
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
        """Mark ``chunk`` and every chunk handed out before it as processed."""
        with self._lock:
            count = next((i + 1 for i, (c, _, _) in enumerate(self._pending) if _same(c, chunk)), 0)
            for _ in range(count):
                c, s, lineno = self._pending.popleft()
                assert c.end is not None
                self._acked[s] = (c.end.offset, lineno)

    def checkpoint(self) -> dict[str, Any]:
        """The local sources' shape (``files: {path: {done, streams}}``) plus the ``url``."""
        with self._lock:
            files = dict(self._restored)
            for path, (done, entries) in self._parts.items():
                streams = []
                for s, e in entries:
                    acked = self._acked.get(s) if s is not None else None
                    at = e if acked is None else dataclasses.replace(e, offset=acked[0], lineno=acked[1])
                    streams.append(at.to_json())
                files[path] = {"done": done, "streams": streams}
            return {"url": self.target.url(), "version": CHECKPOINT_VERSION, "files": files}

    def restore(self, state: dict[str, Any]) -> None:
        """Resume from ``checkpoint()`` output (or an older SSH document); call before the first ``poll()``."""
        with self._lock:
            self._restored = ssh_files_of(state)
            for path in self._restored:
                if path not in self._followers:
                    self._add(path, matched=not self.target.is_glob and path == self.target.path)

    def health(self) -> SourceHealth:
        with self._lock:
            lag, files, overlong = self._numbers
        return self._health.snapshot(up=True, lag=lag, files=files, overlong=overlong)

    def close(self) -> None:
        self._closed = True
        if self._worker is not None:
            self._pool.release(self._worker, self)
            self._worker = None
        with self._working:
            for f in self._followers.values():
                try:
                    f.close()
                except Exception:  # a dead connection took its handles with it
                    log.debug("%s: closing %s", self.name, f.path, exc_info=True)

    @property
    def worker(self) -> HostWorker | None:
        return self._worker

    # -- HostClient (worker thread) --------------------------------------------------------

    def work(self, fs: FileSystem, alive: Callable[[], bool], conn: Connection | None = None) -> bool:
        with self._working:
            if self._closed:
                return False
            self._fs.bind(fs, alive)
            self._conn = conn
            try:
                return self._round(alive)
            except Disconnected as e:
                raise e.__cause__ or e from None  # the worker drops the connection
            finally:
                self._sync()

    def _round(self, alive: Callable[[], bool]) -> bool:
        if self._conn is not None:
            self.remote_files.fetch_zone(self._conn)
        self._sync()
        if self.target.is_glob and self._clock.monotonic() >= self._next_glob:
            self._expand()
        more = False
        for path in list(self._followers):
            if self._buffer.room() <= 0:
                break
            try:
                f = self._resume(path) if path in self._restored else self._followers[path]
                f.look()
                if f.status == "missing":
                    self._health.problem(path, "file_missing", f"{path}: No such file")
                more = self._read(f) or more
            except Disconnected:
                raise
            except Exception as exc:
                if not alive():
                    raise
                self._health.problem(path, "io", f"{path}: {type(exc).__name__} {exc}")
        return more

    def _read(self, f: PathFollower) -> bool:
        """Read up to ``step_bytes`` while the buffer has room; True if more is ready now."""
        budget = self.settings.step_bytes
        while budget > 0 and (room := self._buffer.room()) > 0:
            got, used = f.read(min(budget, room))
            self._hand_over(got)
            budget -= used
            if not used:
                return False
        return budget <= 0 and self._buffer.room() > 0

    def _resume(self, path: str) -> PathFollower:
        """Resume ``path`` from its checkpoint part, afresh if a dropped connection cut a try short."""
        old = self._followers[path]
        f = PathFollower(path, old.cfg, self._health)
        f.matched = old.matched
        try:
            f.resume(self._restored[path])
        except BaseException:
            f.close()
            raise
        with self._lock:
            self._followers[path] = f
            del self._restored[path]
            # Its part now, not at the next ``_sync``: lines read before then could be
            # handed out and committed while a checkpoint held the path in neither place.
            self._parts = {**self._parts, path: f.parts()}
        return f

    def _hand_over(self, got: list[Emitted]) -> None:
        for chunk, s, lineno in got:
            if self._conn is not None:
                self.remote_files.fetch_drafts(self._conn, list(chunk.lines))
            with self._lock:
                self._pending.append((chunk, s, lineno))
            self._buffer.put(chunk)

    def _sync(self) -> None:
        """Apply the consumer's commits, forget what they finished, publish the checkpoint parts."""
        with self._lock:
            for s, (offset, lineno) in self._acked.items():
                s.committed, s.committed_lineno = offset, lineno
            self._acked.clear()
            followers = list(self._followers.items())
            for _, f in followers:
                f.prune()
            self._parts = {p: f.parts() for p, f in followers if p not in self._restored and f.registered}
            streams = [s for _, f in followers for s in f.streams() if s.handle is not None]
            self._numbers = (
                sum(max(0, s.size - s.emitted) for s in streams),
                len(streams),
                sum(s.splitter.overlong for s in streams),
            )

    def host_state(self, up: bool, kind: str, message: str) -> None:
        self._health.host(up, kind, message)

    def reconnected(self) -> None:
        """A new connection: open files are found again before their next read, and are looked at fully."""
        self._fs.reconnected()
        with self._working:
            for f in self._followers.values():
                f.distrust()

    # -- files -----------------------------------------------------------------------------

    def _add(self, path: str, *, matched: bool = True) -> None:
        cfg = self._cfg
        if self.target.is_glob:
            cfg = dataclasses.replace(cfg, source=printable(f"{self.name}:{posixpath.basename(path)}"))
        f = PathFollower(path, cfg, self._health)
        f.matched = matched
        self._followers[path] = f

    def _expand(self) -> None:
        """Follow new glob matches; drop vanished ones once nothing is left to read."""
        self._next_glob = self._clock.monotonic() + self.settings.glob_interval
        directory, pattern = posixpath.split(self.target.path)
        try:
            names = [e.name for e in self._fs.listdir(directory)]
        except (FileNotFoundError, PermissionError) as exc:
            kind = "file_missing" if isinstance(exc, FileNotFoundError) else "permission_denied"
            self._health.problem(self.target.path, kind, f"{directory}: {exc.strerror}")
            return
        self._health.ok(self.target.path)
        matches = {posixpath.join(directory, n) for n in glob_matches(pattern, names)}
        with self._lock:
            for path in sorted(matches):
                if path in self._followers:
                    self._followers[path].matched = True
                else:
                    self._add(path)
            for path, f in list(self._followers.items()):
                if path not in matches and f.matched:
                    f.leave()
                if not f.matched and f.idle and path not in self._restored:
                    del self._followers[path]
                    self._health.forget(path)


def _same(a: Chunk, b: Chunk) -> bool:
    return a is b or (a.end == b.end and a.lineno == b.lineno and a.path == b.path)
