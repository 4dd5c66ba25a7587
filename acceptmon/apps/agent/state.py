"""The checkpoint file: every stage's state in one versioned document, saved together, atomically.

Positions and counters must be taken or dropped together (positions without
counters lose lines, counters without positions count them twice), so the
document is one file written whole (a temporary file, fsync'd, renamed over the
old one, the directory fsync'd: a crash leaves the old or the new one) and read
whole: each stage's decoder checks its part as it reads it
(``acceptmon.statefiles.strict``), and one wrong value anywhere moves the file
aside and the agent starts as on a first run. A file that is not JSON is moved
aside too, so a damaged checkpoint costs a re-read, never a crash loop.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

from acceptmon.apps.agent.announce import Announcer
from acceptmon.apps.agent.history import Episode
from acceptmon.clock import Clock
from acceptmon.detect import Detector, DetectSettings
from acceptmon.detect.cost import CostMeter
from acceptmon.detect.runstats import RunTable
from acceptmon.ingest import Pipeline
from acceptmon.ingest.generated import Generated
from acceptmon.model import Run
from acceptmon.runs import RunTracker
from acceptmon.runs.codec import SnapshotStore, check_source_runs, run_from_dict
from acceptmon.settings.sources import SourceSettings
from acceptmon.sources.base import Source
from acceptmon.sources.tail.entry import check_document
from acceptmon.statefiles import CHECKPOINT_VERSION, ensure_private_dir, read_private, write_private
from acceptmon.statefiles.strict import WrongShape, as_str
from acceptmon.text.printable import printable

log = logging.getLogger("acceptmon.agent")
#: The file's own messages (corrupt, cannot move aside) as they always were logged.
file_log = logging.getLogger("acceptmon.sources")

#: While checkpoints keep failing (a full disk), how often the error is logged again.
REMIND_S = 600.0


class CheckpointInvalid(ValueError):
    """The checkpoint's shape is wrong at ``where`` (no values: they may hold secrets)."""

    def __init__(self, where: str, why: str) -> None:
        self.where = where
        super().__init__(f"{where}: {why}")


class CheckpointFile:
    """The agent's checkpoint in its state directory: when it was last written, failures, discards."""

    def __init__(self, state_dir: Path, clock: Clock) -> None:
        self.state_dir = state_dir
        self.clock = clock
        self.at: float | None = None
        self.errors = 0
        #: Checkpoints found unusable (corrupt or of the wrong shape) and moved aside.
        self.discarded = 0
        #: Positions of sources not followed now, written back as they were read.
        self.positions: dict[str, Any] = {}
        #: The current episode of failed writes (monotonic start, attempts, last log line).
        self._failing_since: float | None = None
        self._failures = 0
        self._reminded = 0.0

    def read(self) -> Any:
        """The saved document, not yet checked; None if there is none or it is not JSON
        (then moved aside and counted)."""
        existed = os.path.lexists(path_in(str(self.state_dir)))
        doc = load(str(self.state_dir))  # moves unparsable JSON aside itself
        if doc is None:
            self.discarded += existed
        return doc

    def discard(self, exc: CheckpointInvalid) -> None:
        self.discarded += 1
        self.positions = {}
        aside = move_aside(str(self.state_dir), "bad")
        log.warning(
            "checkpoint unusable (%s); moved to %s; starting as on a first run (positions and counters "
            "dropped together)",
            exc,
            aside or "nowhere (could not rename it)",
        )

    def write(self, doc: dict[str, Any]) -> bool:
        """Replace the file with ``doc``; a failure is counted, logged once per episode, and retried
        by the next call."""
        try:
            save(str(self.state_dir), doc)
        except OSError as exc:
            self._failed(exc)
            return False
        if self._failing_since is not None:
            log.info("checkpoint written again after %d failed attempts", self._failures)
            self._failing_since = None
        self.at = self.clock.now()
        return True

    def age(self) -> float | None:
        return None if self.at is None else max(0.0, self.clock.now() - self.at)

    def _failed(self, exc: OSError) -> None:
        """Counted every time (``acceptmon_checkpoint_errors_total``); logged once per episode
        and then every ``REMIND_S``: a full disk must not fill the journal at 2 lines/s."""
        self.errors += 1
        now = self.clock.monotonic()
        if self._failing_since is None:
            self._failing_since, self._failures, self._reminded = now, 0, now
            log.error("cannot write checkpoint in %s: %s (will retry)", self.state_dir, exc)
        elif now - self._reminded >= REMIND_S:
            self._reminded = now
            log.error(
                "still cannot write checkpoint in %s: %s (%d attempts in %.0f s; will retry)",
                self.state_dir,
                exc,
                self._failures + 1,
                now - self._failing_since,
            )
        self._failures += 1


# -- the document ------------------------------------------------------------------------


class Stages(Protocol):
    """What the document is made of (the agent's stages and sources)."""

    sources: dict[str, tuple[SourceSettings, Source]]
    checkpoint: CheckpointFile
    pipeline: Pipeline
    tracker: RunTracker
    detector: Detector
    announce: Announcer
    run_table: RunTable
    snapshots: SnapshotStore
    cost: CostMeter
    generated: Generated


def document(stages: Stages) -> dict[str, Any]:
    """Every stage's state as one document (under the agent's lock)."""
    return {
        "version": CHECKPOINT_VERSION,
        "sources": positions(stages),
        "pipeline": stages.pipeline.checkpoint(),
        "runs": stages.tracker.checkpoint(),
        "detector": stages.detector.checkpoint(),
        "announced": stages.announce.checkpoint(stages.detector.findings()),
        "run_stats": stages.run_table.checkpoint(),
        "cost": stages.cost.checkpoint(),
        "generated": stages.generated.checkpoint(),
    }


def positions(stages: Stages) -> dict[str, Any]:
    """Every source's position: those followed now, and those kept from the file."""
    followed = {name: src.checkpoint() for name, (_, src) in stages.sources.items()}
    return {**stages.checkpoint.positions, **followed}


def open_into(stages: Stages, rebuild: Callable[[], None]) -> frozenset[Episode] | None:
    """The checkpoint into every stage, whole; an unusable one is moved aside and ``rebuild``
    builds the stages empty (a first run then). The episodes paged, None without a checkpoint."""
    doc = stages.checkpoint.read()
    if doc is None:
        return None
    try:
        return restore(stages, doc)
    except CheckpointInvalid as exc:
        stages.checkpoint.discard(exc)
        rebuild()
        return None


def restore(stages: Stages, doc: Any) -> frozenset[Episode] | None:
    """Every stage's part of ``doc``, checked by its own decoder as it is read; the episodes
    paged (None in older checkpoints). Raises ``CheckpointInvalid`` at the first wrong value:
    the caller then rebuilds the stages empty (positions are only taken once all is read)."""
    if not isinstance(doc, dict):
        raise CheckpointInvalid("checkpoint", "not an object")
    missing = sorted({"version", "sources", "pipeline", "runs"} - doc.keys())
    if missing:
        raise CheckpointInvalid("checkpoint", f"missing {', '.join(missing)}")
    if type(doc["version"]) is not int or doc["version"] != CHECKPOINT_VERSION:
        raise CheckpointInvalid("version", f"not {CHECKPOINT_VERSION}")
    with _part("sources"):
        for name, raw in _obj(doc["sources"], "sources").items():
            _position(raw, f"sources.{name}")
    with _part("pipeline"):
        pipeline = _obj(doc["pipeline"], "pipeline")
        if "store" not in pipeline:
            raise WrongShape("pipeline", "missing store")
        stages.pipeline.restore(pipeline)
    with _part("runs"):
        for name, raw in _obj(doc["runs"], "runs").items():
            check_source_runs(raw, f"runs.{name}")
        stages.tracker.restore(doc["runs"])
    with _part("detector"):
        detector = _obj(doc.get("detector") or {}, "detector")
        stages.detector.restore(detector, _current(stages.tracker), strict=True)
    with _part("announced"):
        paged = stages.announce.restore(doc.get("announced"), stages.detector.findings())
    stats = doc.get("run_stats")  # advisory (per-run acceptance for /api/runs): read leniently
    stages.run_table.restore(stats if isinstance(stats, dict) else None, lambda s: _snapshot_runs(stages, s))
    stages.cost.restore(doc.get("cost"))  # advisory (an estimate): read leniently
    stages.generated.restore(doc.get("generated"))  # advisory too
    stages.checkpoint.positions = doc["sources"]
    return paged


def _snapshot_runs(stages: Stages, source: str) -> list[Run]:
    """The runs of ``source`` the agent keeps on disk (each already checked by ``load``)."""
    return [run_from_dict(raw) for raw in stages.snapshots.load(source)]


def retune(stages: Stages, config: DetectSettings) -> None:
    """New thresholds for the sources already followed too: the detector's state is carried
    over through its checkpoint form (exact), read back under the new settings."""
    saved = stages.detector.checkpoint()
    stages.detector.config = config
    stages.detector.restore(saved, _current(stages.tracker))


def _current(tracker: RunTracker) -> list[Run]:
    return [run for s in tracker.sources() if (run := tracker.current(s)) is not None]


@contextlib.contextmanager
def _part(name: str) -> Iterator[None]:
    """A stage's decoder failed: ``CheckpointInvalid`` naming the field, never the value."""
    try:
        yield
    except CheckpointInvalid:
        raise
    except WrongShape as exc:
        where = exc.where if exc.where.split(".")[0] == name else f"{name}: {exc.where}"
        raise CheckpointInvalid(where, exc.why) from None
    except Exception as exc:
        raise CheckpointInvalid(name, f"unreadable ({type(exc).__name__})") from None


def _position(raw: Any, where: str) -> None:
    """One source's position: a file source's document, a journald cursor, or nothing yet."""
    d = _obj(raw, where)
    if "cursor" in d:
        if d.keys() != {"cursor"}:
            raise WrongShape(where, "not a journald cursor")
        as_str(d["cursor"], f"{where}.cursor")
    elif d:
        check_document(d, where)


def _obj(raw: Any, where: str) -> dict[str, Any]:
    if not isinstance(raw, dict) or not all(isinstance(k, str) for k in raw):
        raise WrongShape(where, "not an object")
    return raw


# -- the file ----------------------------------------------------------------------------

FILENAME = "checkpoint.json"


class CheckpointWriteError(OSError):
    """Saving failed (disk full, read-only, …); the previous checkpoint is intact."""


def path_in(state_dir: str) -> str:
    return os.path.join(state_dir, FILENAME)


def save(state_dir: str, data: dict[str, Any]) -> None:
    """Replace the checkpoint with ``data`` (JSON-able) atomically and durably."""
    text = json.dumps(data, separators=(",", ":"), sort_keys=True).encode()
    try:
        ensure_private_dir(state_dir)
        write_private(path_in(state_dir), text)
    except OSError as e:
        raise CheckpointWriteError(
            e.errno, f"cannot save checkpoint in {state_dir}: {e.strerror or e}"
        ) from e


def load(state_dir: str, *, now: float | None = None) -> dict[str, Any] | None:
    """The saved checkpoint, or None if there is none or it is unreadable (then moved aside)."""
    path = path_in(state_dir)
    try:
        raw = read_private(path)  # never through a symlink planted in its place
        # A hand-written file may hold a name's raw bytes: they are the name, as os.fsdecode reads it.
        data = json.loads(raw.decode("utf-8-sig", "surrogateescape"))
        if isinstance(data, dict):
            return _printable_names(data)
        reason = "not a JSON object"
    except FileNotFoundError:
        return None
    except OSError as e:  # a symlink or not a regular file: moved aside (the link, not its target)
        reason = f"cannot read it: {e.strerror}"
    except ValueError as e:
        reason = str(e)
    aside = move_aside(state_dir, "corrupt", now=now)
    if aside is None:
        file_log.error("corrupt checkpoint %s (%s) and cannot move it aside", path, reason)
    else:
        file_log.error("corrupt checkpoint moved to %s (%s); starting without it", aside, reason)
    return None


def move_aside(state_dir: str, why: str, *, now: float | None = None) -> str | None:
    """Rename the checkpoint to ``checkpoint.json.<why>-<timestamp>`` (kept for inspection)."""
    path = path_in(state_dir)
    stamp = int(time.time() if now is None else now)
    aside = f"{path}.{why}-{stamp}"
    n = 0
    while os.path.exists(aside):
        n += 1
        aside = f"{path}.{why}-{stamp}.{n}"
    try:
        os.replace(path, aside)
    except OSError as e:
        file_log.error("cannot move checkpoint %s aside: %s", path, e.strerror)
        return None
    return aside


def _printable_names(doc: dict[str, Any]) -> dict[str, Any]:
    """Source names as this version makes them (``terminal.printable``) in a checkpoint written
    before: a non-UTF-8 byte of a file name was saved as is, and made every scrape fail. Only
    text holding such a byte changes; the exact paths inside each ``sources`` entry stay."""

    def fix(value: Any) -> Any:
        if isinstance(value, str):
            return printable(value) if _undecodable(value) else value
        if isinstance(value, list):
            return [fix(v) for v in value]
        if isinstance(value, dict):
            return {fix(k): fix(v) for k, v in value.items()}
        return value

    out = {k: fix(v) for k, v in doc.items() if k != "sources"}
    sources = doc.get("sources")
    if isinstance(sources, dict):
        out["sources"] = {fix(name): positions for name, positions in sources.items()}
    elif "sources" in doc:
        out["sources"] = sources
    return out


def _undecodable(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return True
    return False
