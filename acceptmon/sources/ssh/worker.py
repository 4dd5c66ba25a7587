"""One thread and one SSH connection per (user, host, port), shared by its sources.

All network I/O for a host happens on its worker thread, so a slow or dead
host stalls only its own sources: ``poll()`` merely drains what the worker
already fetched. The worker reconnects with capped, jittered exponential
backoff and tells each attached client about every state change; it logs
only when the state (up, or the kind of failure) changes.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Protocol

from acceptmon.clock import Clock, SystemClock
from acceptmon.sources.ssh.backoff import Backoff
from acceptmon.sources.ssh.connect import ConnectError, Connection, connect, error_kind
from acceptmon.sources.ssh.options import ConnParams, SSHSettings
from acceptmon.sources.ssh.sftpfs import SFTPFS
from acceptmon.sources.tail.fs import FileSystem

log = logging.getLogger(__name__)

Connector = Callable[[ConnParams, float], Connection]


class HostClient(Protocol):
    """What a source offers its host's worker (called on the worker thread)."""

    def work(self, fs: FileSystem, alive: Callable[[], bool], conn: Connection | None = None) -> bool:
        """Bounded I/O for all its files; True if more is ready right away."""
        ...

    def host_state(self, up: bool, kind: str, message: str) -> None: ...

    def reconnected(self) -> None:
        """A new connection: partial reads must restart from line boundaries."""
        ...


class HostWorker:
    """Keeps one connection alive and lets each attached client read through it."""

    def __init__(
        self,
        params: ConnParams,
        settings: SSHSettings,
        clock: Clock,
        connector: Connector = connect,
        rand: Callable[[], float] | None = None,
    ) -> None:
        self.params = params
        self._settings = settings
        self._clock = clock
        self._connector = connector
        self._backoff = Backoff(settings.backoff_base, settings.backoff_cap, rand)
        self._clients: list[HostClient] = []
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopping = False
        self._conn: Connection | None = None
        self._next_try = 0.0
        self._state: tuple[bool, str] | None = None
        name = f"acceptmon-ssh-{params.user}@{params.host}:{params.port}"
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def attach(self, client: HostClient) -> None:
        with self._lock:
            self._clients.append(client)
            up = self._conn is not None
        if up:
            client.host_state(True, "", "")
        self.wake()

    def detach(self, client: HostClient) -> int:
        """Remove a client; return how many remain."""
        with self._lock:
            if client in self._clients:
                self._clients.remove(client)
            return len(self._clients)

    def wake(self) -> None:
        self._wake.set()

    def stop(self, timeout: float = 2.0) -> None:
        """Ask the thread to end; it closes the connection itself if the join times out."""
        self._stopping = True
        self._wake.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout)

    def connection(self) -> Connection | None:
        conn = self._conn
        return conn if conn is not None and conn.alive() else None

    def _run(self) -> None:
        try:
            while not self._stopping:
                if not self.run_once():
                    self._wake.wait(self.idle_delay())
                    self._wake.clear()
        finally:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def idle_delay(self) -> float:
        """How long the thread may sleep: a poll interval, or until the next connect attempt."""
        if self._conn is not None:
            return self._settings.poll_interval
        return max(0.0, self._next_try - self._clock.monotonic())

    def _snapshot(self) -> list[HostClient]:
        with self._lock:
            return list(self._clients)

    def run_once(self) -> bool:
        """One round: connect if needed, else let every client read (the thread loops on this)."""
        conn = self._conn
        if conn is None:
            return self._try_connect()
        if not conn.alive():
            self._drop("io", "connection lost")
            return False
        fs = SFTPFS(conn.sftp)
        more = False
        for client in self._snapshot():
            try:
                more = client.work(fs, conn.alive, conn) or more
            except Exception as exc:  # any failure here means the link is gone
                self._drop("io", f"connection lost: {type(exc).__name__}")
                log.debug("SSH I/O failure on %s", self._where(), exc_info=True)
                return False
        return more

    def _try_connect(self) -> bool:
        now = self._clock.monotonic()
        if now < self._next_try or self._stopping:
            return False
        try:
            conn = self._connector(self.params, self._settings.io_timeout)
        except Exception as exc:  # every failure is counted, none is fatal
            kind = error_kind(exc)
            self._next_try = now + self._backoff.next_delay()
            self._report(False, kind, str(exc) if isinstance(exc, ConnectError) else type(exc).__name__)
            return False
        self._conn = conn
        self._backoff.reset()
        for client in self._snapshot():
            client.reconnected()
        self._report(True, "", "")
        return True

    def _drop(self, kind: str, message: str) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        self._next_try = self._clock.monotonic() + self._backoff.next_delay()
        self._report(False, kind, f"{self._where()}: {message}")

    def _report(self, up: bool, kind: str, message: str) -> None:
        for client in self._snapshot():
            client.host_state(up, kind, message)
        state = (up, kind)
        if state == self._state:
            return
        self._state = state
        if up:
            log.info("SSH connection to %s is up", self._where())
        else:
            log.warning("SSH connection to %s is down (%s): %s", self._where(), kind, message)

    def _where(self) -> str:
        return f"{self.params.user}@{self.params.host}:{self.params.port}"


class HostPool:
    """Shares one worker per (user, host, port) among all sources of a process."""

    def __init__(self, clock: Clock | None = None, connector: Connector = connect) -> None:
        self._clock = clock or SystemClock()
        self._connector = connector
        self._workers: dict[tuple[str, str, int], HostWorker] = {}
        self._lock = threading.Lock()

    def acquire(self, params: ConnParams, settings: SSHSettings, client: HostClient) -> HostWorker:
        with self._lock:
            worker = self._workers.get(params.key)
            if worker is None:
                worker = HostWorker(params, settings, self._clock, self._connector)
                self._workers[params.key] = worker
                worker.start()
            worker.attach(client)
        return worker

    def release(self, worker: HostWorker, client: HostClient) -> None:
        with self._lock:
            if worker.detach(client) > 0:
                return
            if self._workers.get(worker.params.key) is worker:
                del self._workers[worker.params.key]
        worker.stop()

    def find(self, key: tuple[str, str, int]) -> HostWorker | None:
        with self._lock:
            return self._workers.get(key)


#: The process-wide pool; tests pass their own.
DEFAULT_POOL = HostPool()
