"""The long-running agent: sources → pipeline → detector → notifier, with checkpoints.

One ingestion loop polls every source (polls never block: SSH sources do
their network I/O on their own threads), feeds the pipeline and commits
positions. It polls every ``poll_interval``, at once when files come, go or
move, and when a scrape asks for fresh data (``catchup.py``); appended lines
do not wake it, so it costs a few wakes a second, not one per line.

Positions, counters, run state and the detector's state (open
findings, baselines) are checkpointed together, atomically, so a ``kill -9``
at any moment costs a re-read of the lines since the last checkpoint and
nothing else: the re-read lines are counted onto the counters, and fed to
the detector, as they stood at that checkpoint, so each line counts exactly
once and an open finding stays open across the restart.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import Any

from acceptmon import log_time
from acceptmon.apps.agent import checkpoint, checkpoint_schema
from acceptmon.apps.agent.catchup import CatchUp
from acceptmon.apps.agent.checkpoint_schema import Checkpoint, CheckpointInvalid
from acceptmon.apps.agent.history import HistoryFilter
from acceptmon.clock import Clock, EventWaker, SystemClock
from acceptmon.detect import Detector, DetectSettings
from acceptmon.detect.runstats import RunTable
from acceptmon.ingest.build import build_pipeline
from acceptmon.ingest.loop import Loop
from acceptmon.labels import SourceIdentity
from acceptmon.model import Finding, Run, SpecConfig
from acceptmon.runs.ahead import AheadGuard
from acceptmon.runs.codec import SnapshotStore
from acceptmon.runs.draft_config import candidates, parse_config, read_draft_config, read_local
from acceptmon.runs.watched_files import WatchedFiles
from acceptmon.settings import Settings
from acceptmon.settings.sources import SourceSettings
from acceptmon.sources import hub_of, open_source, remote_reader
from acceptmon.sources.base import Source, SourceHealth
from acceptmon.sources.events import FileEvents
from acceptmon.statefiles import ensure_private_dir
from acceptmon.text import redact

log = logging.getLogger("acceptmon.agent")

CHECKPOINT_VERSION = checkpoint_schema.VERSION
#: While checkpoints keep failing (a full disk), how often the error is logged again.
CHECKPOINT_REMIND_S = 600.0


class Agent:
    def __init__(self, settings: Settings, clock: Clock | None = None) -> None:
        self.settings = settings
        self.clock = clock or SystemClock()
        #: Held while a chunk is fed and committed, and by whatever reads or saves the state;
        #: never re-entered (run starts are handled after the chunk: ``ingest.loop``).
        self.lock = threading.Lock()
        self.waker = EventWaker()
        #: Scrapes ask the loop for a pass here and wait for it (bounded).
        self.catchup = CatchUp(self.waker)
        #: Paths file events touched (filled by the daemon's watcher): quiet files are polled slowly.
        self.events = FileEvents()
        self.state_dir = Path(settings.state_dir)
        self.snapshots = SnapshotStore(self.state_dir)
        self.watched = WatchedFiles(settings.watch_files)
        self._build_core()
        self.sources: dict[str, tuple[SourceSettings, Source]] = {}
        self.findings: list[Finding] = []
        self.raised: Counter[tuple[str, str, str]] = Counter()
        self._fired: set[str] = set()
        self.checkpoint_at: float | None = None
        self.checkpoint_errors = 0
        #: The current episode of failed checkpoints (monotonic start, attempts, last log line).
        self._failing_since: float | None = None
        self._failures = 0
        self._reminded = 0.0
        #: Checkpoints found unusable (corrupt or of the wrong shape) and moved aside.
        self.checkpoint_discarded = 0
        self._dirty = False
        self.notify_worker: Any = None
        self._saved: dict[str, Any] = {}
        #: Whether the last load or reload of the settings took, and when one last did.
        self.reload_ok = True
        self.reload_at = self.clock.now()
        #: Host and user labels per source, stamped onto its findings.
        self.identities: dict[str, SourceIdentity] = {}
        self.history = HistoryFilter(time.time())
        #: Set once ``open`` has restored the checkpoint: HTTP answers 503 before that.
        self.restored = False

    def _build_core(self) -> None:
        """The stages that hold checkpointed state (rebuilt empty if a restore fails)."""
        settings = self.settings
        self._zones: dict[str, tzinfo] = {}
        #: Sources whose current run's draft config.json could not be found (a gauge).
        self.draft_missing: dict[str, bool] = {}
        self._draft_warned: set[tuple[str, str]] = set()
        self._unknown_warned: set[str] = set()
        # Log times more than AHEAD_S after this host's clock are counted, never trusted.
        self.pipeline = build_pipeline(
            self._zone,
            draft=self._read_draft if settings.read_draft_config else None,
            watched=self.watched.snapshot,
            declared=self._declared,
            year_hint=lambda _chunk: datetime.now(UTC),
            ahead=AheadGuard(self.clock.now),
        )
        self.tracker = self.pipeline.tracker
        self.detector = Detector(settings.detect, judge_ending_runs=True)
        #: Per-run acceptance and the verdict, for /api/runs and /api/verdict.
        self.run_table = RunTable(self.tracker, self.detector.config)
        self.pipeline.consumers += [self.detector, self.run_table]
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
        saved = self._load_checkpoint()
        with self.lock:
            if saved is not None and not self._restore(saved):
                self._discard(CheckpointInvalid("checkpoint", "could not be restored"))
                self._build_core()
                saved = None
            self.history.open_at_start(self.detector.findings(), saved.paged if saved is not None else None)
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
        self._start_notifier()

    def _load_checkpoint(self) -> Checkpoint | None:
        """The checkpoint, validated as a whole; an unusable one is moved aside (first run then)."""
        existed = os.path.lexists(checkpoint.path_in(str(self.state_dir)))
        raw = checkpoint.load(str(self.state_dir))  # moves unparsable JSON aside itself
        if raw is None:
            self.checkpoint_discarded += existed
            return None
        try:
            return checkpoint_schema.parse(raw, self.detector.config)
        except CheckpointInvalid as exc:
            self._discard(exc)
            return None

    def _discard(self, exc: CheckpointInvalid) -> None:
        self.checkpoint_discarded += 1
        self._saved = {}
        aside = checkpoint.move_aside(str(self.state_dir), "bad")
        log.warning(
            "checkpoint unusable (%s); moved to %s; starting as on a first run (positions and counters "
            "dropped together)",
            exc,
            aside or "nowhere (could not rename it)",
        )

    def _restore(self, saved: Checkpoint) -> bool:
        """Positions, counters, runs and findings from ``saved``; False if any part fails."""
        try:
            self.pipeline.restore(saved.pipeline)
            self.tracker.restore(saved.runs)
            self._restore_findings(saved)
            self.run_table.restore(saved.run_stats)
        except Exception as exc:
            log.debug("restore failed: %s", type(exc).__name__)
            return False
        self._saved = saved.sources
        return True

    def watch_dirs(self) -> list[str]:
        """Directories whose file events should wake the loop."""
        dirs: set[str] = {os.path.dirname(os.path.abspath(p)) for p in self.watched.paths()}
        for _, source in self.sources.values():
            watch = getattr(source, "watch_dirs", None)
            if watch is not None:
                dirs.update(watch())
        return sorted(dirs)

    def _add_source(self, cfg: SourceSettings) -> None:
        source = open_source(cfg, self.clock, self.events, candidates)
        state = self._saved.get(cfg.name)
        if state:
            source.restore(state)
        self.sources[cfg.name] = (cfg, source)
        identity = SourceIdentity.of(cfg.path, cfg.option("host"), dict(cfg.option("labels") or ()))
        self.identities[cfg.name] = identity
        self.pipeline.store.hosts[cfg.name] = identity.host
        log.info("following %s as source '%s'", cfg.path, cfg.name)

    def _zone(self, name: str) -> tzinfo:
        """The zone of a source's log times, worked out once, at its first chunk."""
        tz = self._zones.get(name)
        if tz is None:
            configured = self._config_name(name)
            entry = self.sources.get(configured) if configured else None
            if configured and configured != name and configured in self.identities:
                # One file of a glob: the series carries its source's host and labels.
                self.identities[name] = self.identities[configured]
                self.pipeline.store.hosts[name] = self.identities[configured].host
            if entry is None:
                tz = log_time.host_zone()
            else:
                cfg, source = entry
                remote = remote_reader(cfg, source)
                tz = log_time.source_zone(cfg.option("timezone"), remote)
            self._zones[name] = tz
            log.info("source '%s': log times are in %s", name, log_time.zone_name(tz))
        return tz

    def _start_notifier(self) -> None:
        self.notify_worker = self._notify_worker(self.settings)
        if self.notify_worker is not None:
            self.notify_worker.start()

    def _notify_worker(self, settings: Settings) -> Any:
        """A worker (not started) for the notifiers of ``settings``; raises ``NotifySettingsError``."""
        if not settings.notify:
            return None
        from acceptmon.notify import NotifyWorker, build_notifier

        notifier = build_notifier(settings.notify, self.state_dir / "notify")
        return NotifyWorker(notifier)

    def close(self) -> None:
        """Checkpoint what has been processed and release everything (fast: no draining)."""
        self.evaluate()
        self.save_checkpoint()
        for _, source in self.sources.values():
            source.close()
        if self.notify_worker is not None:
            self.notify_worker.stop()

    # -- the loop ------------------------------------------------------------------------

    def step(self, budget: int = 64, seconds: float = 0.25) -> int:
        """One pass of the live loop over every source (``ingest.loop``); return lines processed."""
        total = self.loop.step({name: src for name, (_, src) in self.sources.items()}, budget, seconds)
        if not self.loop.backlog and self.history.catching_up:
            with self.lock:
                self.history.caught_up(
                    [self._identify(f) for f in self.detector.evaluate()], self.detector.last_time
                )
        return total

    @property
    def backlog(self) -> bool:
        """Whether the last step left unread data behind (then the loop does not sleep)."""
        return self.loop.backlog

    @property
    def last_progress(self) -> float:
        """When ingestion last advanced (monotonic seconds), read by /healthz without the lock."""
        return self.loop.last_progress

    def pending(self) -> bool:
        """Lines wait to be ingested (no lock taken: safe to call while a step runs)."""
        return self.loop.pending()

    def run(self, stop: threading.Event, reload: threading.Event | None = None) -> None:
        """Ingest until ``stop`` is set; ``reload`` asks for a config reload (SIGHUP)."""
        next_checkpoint = next_eval = 0.0
        while not stop.is_set():
            ticket = self.catchup.begin()
            if ticket is not None:
                self.events.look_everywhere()  # appends name no file: a scrape must see them all
            self.step()
            now = time.monotonic()
            if self.watched.changed():
                self._watched_changed()
            if now >= next_eval or ticket is not None:  # a scrape sees findings of its lines too
                # While catching up, "now" is the log's time: a backlog must not look stalled.
                self.evaluate(wall_clock=not self.backlog)
                next_eval = now + 1.0
            if ticket is not None:
                self.catchup.answered(ticket)
            if now >= next_checkpoint and self._dirty:
                self.save_checkpoint()
                next_checkpoint = now + self.settings.checkpoint_interval
            if reload is not None and reload.is_set():
                reload.clear()
                self.reload_requested()
            if not self.backlog and not self.catchup.pending():
                self.waker.wait(self.settings.poll_interval)

    def reload_requested(self) -> None:
        """Replaced by the daemon, which knows where the config came from."""

    def reload_done(self, ok: bool) -> None:
        """Record a reload's outcome for ``acceptmon_config_last_reload_*``."""
        self.reload_ok = ok
        if ok:
            self.reload_at = self.clock.now()

    def reconfigure(self, settings: Settings) -> None:
        """Apply reloaded settings to every stage; sources whose settings did not change keep
        their position. The notifiers are rebuilt first (raising ``NotifySettingsError``, with
        nothing changed, if they cannot be); their queues persist, so nothing is lost."""
        self._swap_notifier(settings)
        wanted = {s.name: s for s in settings.sources}
        with self.lock:
            self._saved = self._positions()
            for name, (old, source) in list(self.sources.items()):
                if wanted.get(name) != old:
                    source.close()
                    del self.sources[name]
                    self._zones.pop(name, None)  # a changed timezone: looked up afresh
            for name, cfg in wanted.items():
                if name not in self.sources:
                    self._add_source(cfg)
            self.settings = settings
            self.watched = WatchedFiles(settings.watch_files)
            self.tracker.configure(
                self._read_draft if settings.read_draft_config else None, self.watched.snapshot
            )
            self._reconfigure_detector(settings.detect)

    def _swap_notifier(self, settings: Settings) -> None:
        """Stop the old worker (pending notifications stay on disk) and start the new one;
        if the new one cannot be built, the old one resumes and the error propagates."""
        old = self.notify_worker
        if old is not None:
            old.stop()
        try:
            new = self._notify_worker(settings)
        except Exception:
            if old is not None:
                from acceptmon.notify import NotifyWorker

                self.notify_worker = NotifyWorker(old.notifier)
                self.notify_worker.start()
            raise
        self.notify_worker = new
        if new is not None:
            new.start()

    def _reconfigure_detector(self, config: DetectSettings) -> None:
        """New thresholds for the sources already followed too: their state is carried over
        through the checkpoint form (exact), read back under the new settings."""
        state = self.detector.checkpoint()
        self.detector.config = config
        current = [run for s in self.tracker.sources() if (run := self.tracker.current(s)) is not None]
        self.detector.restore(state, current)

    # -- checkpoints ---------------------------------------------------------------------

    def checkpoint_state(self) -> dict[str, Any]:
        with self.lock:
            return {
                "version": CHECKPOINT_VERSION,
                "sources": self._positions(),
                "pipeline": self.pipeline.checkpoint(),
                "runs": self.tracker.checkpoint(),
                "detector": self.detector.checkpoint(),
                "announced": self._announced(),
                "run_stats": self.run_table.checkpoint(),
            }

    def _positions(self) -> dict[str, Any]:
        sources = {name: src.checkpoint() for name, (_, src) in self.sources.items()}
        return {**self._saved, **sources}

    def _announced(self) -> dict[str, Any]:
        """Keys already announced (of the findings the detector still holds) and the counts raised."""
        findings = self.detector.findings()
        held = {f.key for f in findings}
        raised = [[*key, n] for key, n in sorted(self.raised.items())]
        paged = [list(ep) for ep in self.history.paged(findings)]
        return {"keys": sorted(self._fired & held), "raised": raised, "paged": paged}

    def _restore_findings(self, saved: Checkpoint) -> None:
        """The detector's state, and what was announced of it: an open finding stays open across
        a restart (no false resolution) and is neither logged nor counted as new again."""
        current = [run for s in self.tracker.sources() if (run := self.tracker.current(s)) is not None]
        self.detector.restore(saved.detector, current)
        self._fired = set(saved.announced_keys) & {f.key for f in self.detector.findings()}
        self.raised = Counter(saved.raised)

    def save_checkpoint(self) -> bool:
        try:
            # The state is taken under the lock, written outside it (only the loop feeds).
            checkpoint.save(str(self.state_dir), self.checkpoint_state())
            self._dirty = False
        except OSError as exc:
            self._checkpoint_failed(exc)
            return False
        if self._failing_since is not None:
            log.info("checkpoint written again after %d failed attempts", self._failures)
            self._failing_since = None
        self.checkpoint_at = self.clock.now()
        return True

    def _checkpoint_failed(self, exc: OSError) -> None:
        """Counted every time (``acceptmon_checkpoint_errors_total``); logged once per episode
        and then every ``CHECKPOINT_REMIND_S``: a full disk must not fill the journal at 2 lines/s."""
        self.checkpoint_errors += 1
        now = self.clock.monotonic()
        if self._failing_since is None:
            self._failing_since, self._failures, self._reminded = now, 0, now
            log.error("cannot write checkpoint in %s: %s (will retry)", self.state_dir, exc)
        elif now - self._reminded >= CHECKPOINT_REMIND_S:
            self._reminded = now
            log.error(
                "still cannot write checkpoint in %s: %s (%d attempts in %.0f s; will retry)",
                self.state_dir,
                exc,
                self._failures + 1,
                now - self._failing_since,
            )
        self._failures += 1

    # -- runs, configs, findings ---------------------------------------------------------

    def _source_entry(self, source: str) -> tuple[SourceSettings, Source] | None:
        """The configured source a record's ``source`` came from (a glob's is ``name:file``)."""
        entry = self.sources.get(source)
        if entry is None:
            entry = next((e for n, e in self.sources.items() if source.startswith(n + ":")), None)
        return entry

    def _read_draft(self, source: str, draft_path: str) -> dict[str, Any] | None:
        """The run's draft config.json where the log lives; a miss is one WARNING and a gauge."""
        entry = self._source_entry(source)
        if entry is not None and entry[0].kind == "ssh":
            fetched = entry[1].remote_files.draft(draft_path)  # type: ignore[attr-defined]
            found = parse_config(fetched[1], fetched[0]) if fetched else None
        else:
            found = read_draft_config(draft_path, read_local, hub_of(entry[0]) if entry else None)
        self.draft_missing[source] = found is None
        if found is None and (source, draft_path) not in self._draft_warned:
            self._draft_warned.add((source, draft_path))
            log.warning(
                "%s: no config.json found for draft model %s; changes inside it cannot be seen "
                "(set hf_home for a Hugging Face cache elsewhere)",
                source,
                redact.redact_text(draft_path, harmless=True),
            )
        return found

    def _declared(self, source: str) -> SpecConfig | None:
        """The source's ``speculative:`` settings, for a run whose start line was never seen."""
        entry = self._source_entry(source)
        spec = entry[0].speculative() if entry else {}
        if not spec:
            return None
        steps, topk = spec.get("num_steps"), spec.get("topk")
        tokens = spec.get("num_draft_tokens") or (steps + 1 if steps and (topk or 1) == 1 else None)
        return SpecConfig("declared", steps, topk, tokens)

    def _chunk_done(self, starts: list[Run]) -> None:
        """After each chunk, outside the lock: the run starts it held, in line order (the
        detector and the run table had them in their place already)."""
        self._dirty = True
        for run in starts:
            self._run_started(run)

    def _run_started(self, run: Run) -> None:
        if run.config is None and run.spec.slots is None and run.source not in self._unknown_warned:
            self._unknown_warned.add(run.source)
            log.warning(
                "%s: no server_args line seen for this run (rotated away, or read from the end): accept "
                "rates cannot be normalised; declare the source's speculative: {num_steps, "
                "num_draft_tokens, topk} (acceptmon_run_settings_unknown is 1 meanwhile)",
                run.source,
            )
        # The ending run's verdict first, as the detector judged it in line: a backlog (agent
        # deployed or down during the incident) is read in one go, and a later run of the
        # same chunk may have resolved what it found already.
        judged = self.detector.judged(run)
        if judged is not None:
            self.announce(judged)
        if self.notify_worker is not None:
            self.notify_worker.note_run(run)
        try:
            self.snapshots.save(run)
        except OSError as exc:
            log.error("cannot save run snapshot for %s %s: %s", run.source, run.run_id, exc)

    def _watched_changed(self) -> None:
        """A watched file changed without a restart (a draft config.json edit waits for one)."""
        watched = self.watched.snapshot()
        opened = []
        with self.lock:
            for source in self.tracker.sources():
                run = self.tracker.new_segment(source, watched)
                if run is not None:
                    self.pipeline.run_started(run)
                    opened.append(run)
        for run in opened:
            log.warning("config of %s changed without a restart: new segment %s", run.source, run.run_id)
            self._run_started(run)

    def evaluate(self, wall_clock: bool = True) -> list[Finding]:
        """Without ``wall_clock`` the log's own time is "now", so a backlog cannot look stalled."""
        with self.lock:
            found = self.detector.evaluate(datetime.now(UTC) if wall_clock else None)
        return self.announce(found)

    def announce(self, found: list[Finding]) -> list[Finding]:
        """Log, count and page what is new among ``found`` (every source's findings)."""
        with self.lock:
            findings = [self._identify(f) for f in found]
            if findings != self.findings:  # e.g. a stall, with no new line to mark the state dirty
                self._dirty = True
        for f in findings:
            if f.active and f.key not in self._fired:
                self._fired.add(f.key)
                self.raised[(f.rule, f.source, f.severity)] += 1
                log.warning("finding %s (%s) on %s: %s", f.rule, f.severity, f.source, f.summary)
            if self.notify_worker is not None and self.history.pageable(f):
                self.notify_worker.notify(f)
        self.findings = findings
        return findings

    def _config_name(self, series: str) -> str | None:
        """The configured source a series belongs to (a glob's files are ``name:file``)."""
        if series in self.sources:
            return series
        return next((n for n in self.sources if series.startswith(n + ":")), None)

    def _identify(self, f: Finding) -> Finding:
        """The finding with its source's host, labels and engine (the detector knows none)."""
        configured = self._config_name(f.source)
        identity = self.identities.get(f.source) or (self.identities.get(configured) if configured else None)
        stats = self.pipeline.store.sources.get(f.source)
        engine = stats.engine if stats is not None else f.engine
        if engine != f.engine:
            f = replace(f, engine=engine)
        if identity is None or (f.host == identity.host and f.labels == identity.labels):
            return f
        return replace(f, host=identity.host, labels=identity.labels)

    def health(self) -> dict[str, SourceHealth]:
        return {name: src.health() for name, (_, src) in self.sources.items()}

    def checkpoint_age(self) -> float | None:
        return None if self.checkpoint_at is None else max(0.0, self.clock.now() - self.checkpoint_at)
