"""The long-running agent: sources → pipeline → detector → notifier, with checkpoints.

One ingestion loop polls every source (polls never block: SSH sources do
their network I/O on their own threads), feeds the pipeline and commits
positions. It polls every ``poll_interval``, at once when files come, go or
move, and when a scrape asks for fresh data (``catchup.py``); appended lines
do not wake it, so it costs a few wakes a second, not one per line.

Positions, counters, run state and the detector's state (open
findings, baselines) are checkpointed together, atomically (``state.py``), so a
``kill -9`` at any moment costs a re-read of the lines since the last checkpoint
and nothing else: the re-read lines are counted onto the counters, and fed to
the detector, as they stood at that checkpoint, so each line counts exactly
once and an open finding stays open across the restart.

This class is the lifecycle and the wiring; findings are announced by
``announce.py``, per-source answers come from ``origins.py``, the HTTP face
is ``web/`` with the /api rows in ``api.py``, signals and reloads ``daemon.py``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from acceptmon.apps.agent import announce, state
from acceptmon.apps.agent.announce import Announcer
from acceptmon.apps.agent.catchup import CatchUp
from acceptmon.apps.agent.origins import Origins, new_segments
from acceptmon.apps.agent.state import CheckpointFile
from acceptmon.clock import Clock, EventWaker, SystemClock
from acceptmon.detect import Detector
from acceptmon.detect.cost import CostMeter
from acceptmon.detect.runstats import RunTable
from acceptmon.ingest.build import build_pipeline
from acceptmon.ingest.generated import Generated
from acceptmon.ingest.loop import Loop
from acceptmon.model import Finding, Run
from acceptmon.runs.ahead import AheadGuard
from acceptmon.runs.codec import SnapshotStore
from acceptmon.runs.draft_config import candidates
from acceptmon.runs.watched_files import WatchedFiles
from acceptmon.settings import Settings
from acceptmon.settings.sources import SourceSettings
from acceptmon.sources import open_source
from acceptmon.sources.base import Source
from acceptmon.sources.events import FileEvents
from acceptmon.statefiles import ensure_private_dir
from acceptmon.text import redact

log = logging.getLogger("acceptmon.agent")


class Agent:
    """The agent's lifecycle (open, run, reconfigure, close) and the wiring of its stages."""

    def __init__(self, settings: Settings, clock: Clock | None = None) -> None:
        self.settings = settings
        self.clock = clock or SystemClock()
        #: A plain lock: run starts are handled after their chunk, never re-entering it.
        self.lock = threading.Lock()
        self.waker = EventWaker()
        #: Scrapes ask the loop for a pass here and wait for it (bounded).
        self.catchup = CatchUp(self.waker)
        #: Paths file events touched (filled by the daemon's watcher): quiet files are polled slowly.
        self.events = FileEvents()
        self.state_dir = Path(settings.state_dir)
        self.snapshots = SnapshotStore(self.state_dir)
        self.checkpoint = CheckpointFile(self.state_dir, self.clock)
        self.announce = Announcer(self.state_dir / "notify", time.time())
        self.history = self.announce.history
        self.watched = WatchedFiles(settings.watch_files)
        self.sources: dict[str, tuple[SourceSettings, Source]] = {}
        self._build_core()
        self._dirty = False
        #: Whether the last load or reload of the settings took, and when one last did (daemon.py).
        self.reload_ok = True
        self.reload_at = self.clock.now()
        #: Set once ``open`` has restored the checkpoint: HTTP answers 503 before that.
        self.restored = False

    def _build_core(self) -> None:
        """The stages that hold checkpointed state (rebuilt empty if a restore fails)."""
        settings = self.settings
        self.origins = Origins(self.sources)
        # Log times more than AHEAD_S after this host's clock are counted, never trusted.
        self.pipeline = build_pipeline(
            self.origins.zone,
            draft=self.origins.read_draft if settings.read_draft_config else None,
            watched=self.watched.snapshot,
            declared=self.origins.declared,
            year_hint=lambda _chunk: datetime.now(UTC),
            ahead=AheadGuard(self.clock.now),
        )
        self.tracker = self.pipeline.tracker
        self.origins.hosts = self.pipeline.store.hosts
        # Judges a run as it ends, in line order: a later run of the same chunk may resolve it.
        self.detector = Detector(settings.detect, judge_ending_runs=True)
        #: Per-run acceptance and the verdict, for /api/runs and /api/verdict.
        self.run_table = RunTable(self.tracker, self.detector.config)
        #: Tokens each drop cost (``acceptmon_drop_tokens_lost_estimate_total``, findings' tokens_lost).
        self.cost = CostMeter()
        #: Tokens each run generated: a worse verdict's tokens lost, as ``acceptmon runs`` says them.
        self.generated = Generated(self.tracker)
        self.pipeline.consumers += [self.detector, self.cost, self.run_table, self.generated]
        self.loop = Loop(self.pipeline, self.lock, self._chunk_done)

    # -- lifecycle -----------------------------------------------------------------------

    def open(self) -> None:
        """Restore the checkpoint and open every configured source."""
        ensure_private_dir(self.state_dir)
        redact.load_key(self.state_dir)
        try:
            self.snapshots.prune()
        except OSError as exc:
            log.warning("cannot prune run snapshots in %s: %s", self.snapshots.root, exc.strerror)
        with self.lock:
            paged = state.open_into(self, rebuild=self._build_core)
            self.history.open_at_start(self.detector.findings(), paged)
        for cfg in self.settings.sources:
            self._add_source(cfg)
        # Log time as "now": the agent's own downtime must not look like a stalled log.
        # After the sources are added: findings carry their source's host and labels.
        self.evaluate(wall_clock=False)
        self.restored = True
        # No reading here: a backlog is read by ``run`` in time-bounded steps, so the
        # HTTP server answers and SIGTERM is honoured during catch-up. The first
        # step is checkpointed right away by ``run`` (a source starts at its first poll).
        self._dirty = True
        self.announce.start(self.settings)

    def _add_source(self, cfg: SourceSettings) -> None:
        self.origins.add(cfg, self._open_source(cfg, self.checkpoint.positions.get(cfg.name)))

    def _open_source(self, cfg: SourceSettings, saved: dict[str, Any] | None) -> Source:
        source = open_source(cfg, self.clock, self.events, candidates)
        if saved:
            source.restore(saved)
        return source

    def close(self) -> None:
        """Checkpoint what has been processed and release everything (fast: no draining)."""
        self.evaluate()
        self.save_checkpoint()
        for _, source in self.sources.values():
            source.close()
        self.announce.stop()

    # -- the loop ------------------------------------------------------------------------

    def step(self, budget: int = 64, seconds: float = 0.25) -> int:
        """One pass of the live loop over every source (``ingest.loop``); return lines processed."""
        total = self.loop.step({name: src for name, (_, src) in self.sources.items()}, budget, seconds)
        if not self.loop.backlog and self.history.catching_up:
            with self.lock:
                found = [self._identify(f) for f in self.detector.evaluate()]
                self.history.caught_up(found, self.detector.last_time)
        return total

    def run(
        self,
        stop: threading.Event,
        reload: threading.Event | None = None,
        on_reload: Callable[[], None] | None = None,
    ) -> None:
        """Ingest until ``stop`` is set; ``reload`` (SIGHUP) asks for ``on_reload`` (the daemon's)."""
        next_checkpoint = next_eval = 0.0
        while not stop.is_set():
            ticket = self.catchup.begin()
            if ticket is not None:
                self.events.look_everywhere()  # appends name no file: a scrape must see them all
            self.step()
            now = time.monotonic()
            if self.watched.changed():
                with self.lock:
                    opened = new_segments(self.pipeline, self.watched.snapshot())
                self._chunk_done(opened)
            if now >= next_eval or ticket is not None:  # a scrape sees findings of its lines too
                # While catching up, "now" is the log's time: a backlog must not look stalled.
                self.evaluate(wall_clock=not self.loop.backlog)
                next_eval = now + 1.0
            if ticket is not None:
                self.catchup.answered(ticket)
            if now >= next_checkpoint and self._dirty:
                self.save_checkpoint()
                next_checkpoint = now + self.settings.checkpoint_interval
            if reload is not None and reload.is_set():
                reload.clear()
                if on_reload is not None:
                    on_reload()
            if not self.loop.backlog and not self.catchup.pending():
                self.waker.wait(self.settings.poll_interval)

    def reconfigure(self, settings: Settings) -> None:
        """Swap to reloaded settings whole: changed sources and the notifiers are built first (an
        error propagates with nothing changed), then every stage takes the settings under the lock;
        changed sources resume from their position, notifier queues persist."""
        wanted = {s.name: s for s in settings.sources}
        with self.lock:
            positions = state.positions(self)
        changed = [
            cfg for name, cfg in wanted.items() if name not in self.sources or self.sources[name][0] != cfg
        ]
        built: list[tuple[SourceSettings, Source]] = []
        try:
            for cfg in changed:
                built.append((cfg, self._open_source(cfg, positions.get(cfg.name))))
            self.announce.swap(settings)
        except Exception:
            for _, source in built:
                source.close()
            raise
        with self.lock:
            self.checkpoint.positions = positions
            for name, (old, _) in list(self.sources.items()):
                if wanted.get(name) != old:
                    self.origins.remove(name)
            for cfg, source in built:
                self.origins.add(cfg, source)
            self.settings = settings
            self.watched = WatchedFiles(settings.watch_files)
            self.tracker.configure(
                self.origins.read_draft if settings.read_draft_config else None, self.watched.snapshot
            )
            state.retune(self, settings.detect)

    def save_checkpoint(self) -> bool:
        """Every stage's state, written as one document (``state.py``); False if it failed."""
        with self.lock:
            doc = state.document(self)
        saved = self.checkpoint.write(doc)  # outside the lock: only the loop thread feeds
        self._dirty = self._dirty and not saved
        return saved

    # -- runs and findings ---------------------------------------------------------------

    def _chunk_done(self, starts: list[Run]) -> None:
        """After each chunk, outside the lock: the run starts it held, in line order (the
        detector and the run table had them in their place already)."""
        self._dirty = True
        for run in starts:
            self._run_started(run)

    def _run_started(self, run: Run) -> None:
        self.origins.note_run(run)
        # The ending run's verdict first, as the detector judged it in line: a backlog (agent
        # deployed or down during the incident) is read in one go, and a later run of the
        # same chunk may have resolved what it found already.
        judged = self.detector.judged(run)
        if judged is not None:
            self._announce(judged)
        if self.announce.worker is not None:
            self.announce.worker.note_run(run)
        try:
            self.snapshots.save(run)
        except OSError as exc:
            log.error("cannot save run snapshot for %s %s: %s", run.source, run.run_id, exc)

    def evaluate(self, wall_clock: bool = True) -> list[Finding]:
        """Without ``wall_clock`` the log's own time is "now", so a backlog cannot look stalled."""
        with self.lock:
            found = self.detector.evaluate(datetime.now(UTC) if wall_clock else None)
        return self._announce(found)

    def _announce(self, found: list[Finding]) -> list[Finding]:
        """Log, count and page what is new among ``found`` (every source's findings)."""
        with self.lock:
            self.cost.note(found)
            findings = [self.cost.fill(self._identify(f)) for f in found]
            if findings != self.announce.findings:  # e.g. a stall, with no new line to mark it dirty
                self._dirty = True
        self.announce.announce(findings)
        return findings

    def _identify(self, f: Finding) -> Finding:
        return announce.identify(
            f, self.origins.identities, self.sources, self.pipeline.store, self._config_hash
        )

    def _config_hash(self, source: str, run_id: str) -> str:
        """The config hash of run ``run_id`` of ``source`` while the tracker remembers it."""
        run = next((r for r in reversed(self.tracker.runs(source)) if r.run_id == run_id), None)
        return run.config.hash if run is not None and run.config is not None else ""
