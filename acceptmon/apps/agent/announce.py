"""Announcing findings: each new one logged and counted once, every change handed to the notifiers.

The detector only evaluates; what has been announced of its findings (the keys
already logged, the counts behind ``acceptmon_findings_total``, the episodes
paged) is kept here and saved with the checkpoint, so an open finding is not
announced again after a restart. History (what a backlog already settled) is
held back from the notifiers by ``history.HistoryFilter``.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Collection, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from acceptmon.apps.agent.history import Episode, HistoryFilter
from acceptmon.labels import SourceIdentity
from acceptmon.metrics.store import Store
from acceptmon.model import Finding
from acceptmon.settings import Settings
from acceptmon.statefiles.strict import WrongShape, as_int, as_str

log = logging.getLogger("acceptmon.agent")

#: (rule, source, severity): the labels of ``acceptmon_findings_total``.
Raised = tuple[str, str, str]


class Announcer:
    """Findings → the log, the counters of /metrics and the notifiers."""

    def __init__(self, notify_dir: Path, started: float) -> None:
        self.notify_dir = notify_dir
        #: The findings of the last evaluation, with their sources' labels (``identify``).
        self.findings: list[Finding] = []
        self.raised: Counter[Raised] = Counter()
        self.history = HistoryFilter(started)
        #: The running ``NotifyWorker``, or None without notifiers.
        self.worker: Any = None
        self._fired: set[str] = set()

    def announce(self, findings: list[Finding]) -> None:
        for f in findings:
            if f.active and f.key not in self._fired:
                self._fired.add(f.key)
                self.raised[(f.rule, f.source, f.severity)] += 1
                log.warning("finding %s (%s) on %s: %s", f.rule, f.severity, f.source, f.summary)
            if self.worker is not None and self.history.pageable(f):
                self.worker.notify(f)
        self.findings = findings

    # -- notifiers ---------------------------------------------------------------------------

    def start(self, settings: Settings) -> None:
        self.worker = self._build(settings)
        if self.worker is not None:
            self.worker.start()

    def swap(self, settings: Settings) -> None:
        """Stop the old worker (pending notifications stay on disk) and start the new one;
        if the new one cannot be built, the old one resumes and the error propagates
        (``NotifySettingsError``)."""
        old = self.worker
        if old is not None:
            old.stop()
        try:
            new = self._build(settings)
        except Exception:
            if old is not None:
                from acceptmon.notify import NotifyWorker

                self.worker = NotifyWorker(old.notifier)
                self.worker.start()
            raise
        self.worker = new
        if new is not None:
            new.start()

    def stop(self) -> None:
        if self.worker is not None:
            self.worker.stop()

    def _build(self, settings: Settings) -> Any:
        """A worker (not started) for the notifiers of ``settings``; raises ``NotifySettingsError``."""
        if not settings.notify:
            return None
        from acceptmon.notify import NotifyWorker, build_notifier

        return NotifyWorker(build_notifier(settings.notify, self.notify_dir))

    # -- the checkpoint's ``announced`` part -------------------------------------------------

    def checkpoint(self, held: list[Finding]) -> dict[str, Any]:
        """Keys already announced (of the findings the detector still holds) and the counts raised."""
        keys = {f.key for f in held}
        raised = [[*key, n] for key, n in sorted(self.raised.items())]
        paged = [list(ep) for ep in self.history.paged(held)]
        return {"keys": sorted(self._fired & keys), "raised": raised, "paged": paged}

    def restore(self, raw: Any, held: list[Finding]) -> frozenset[Episode] | None:
        """Take back ``checkpoint()`` output, every value checked first (``WrongShape``, nothing
        taken, if one is wrong); returns the episodes paged (None in older checkpoints)."""
        d = raw or {}
        if not isinstance(d, dict):
            raise WrongShape("announced", "not an object")
        keys = {as_str(k, "announced.keys[]") for k in _list(d.get("keys", []), "announced.keys")}
        raised: Counter[Raised] = Counter()
        for i, row in enumerate(_list(d.get("raised", []), "announced.raised")):
            if not isinstance(row, list) or len(row) != 4:
                raise WrongShape(f"announced.raised[{i}]", "not [rule, source, severity, count]")
            rule, source, severity = (as_str(v, f"announced.raised[{i}]") for v in row[:3])
            raised[(rule, source, severity)] = as_int(row[3], f"announced.raised[{i}][3]", low=0)
        paged = _paged(d.get("paged"))
        self._fired = keys & {f.key for f in held}
        self.raised = raised
        return paged


def identify(
    f: Finding,
    identities: Mapping[str, SourceIdentity],
    configured: Collection[str],
    store: Store,
    config_hash: Callable[[str, str], str] | None = None,
) -> Finding:
    """The finding with its source's host, labels, engine and its run's config hash (the
    detector knows none); ``config_hash(source, run_id)`` is "" for a run no longer known."""
    name = config_name(f.source, configured)
    identity = identities.get(f.source) or (identities.get(name) if name else None)
    stats = store.sources.get(f.source)
    engine = stats.engine if stats is not None else f.engine
    if engine != f.engine:
        f = replace(f, engine=engine)
    found = config_hash(f.source, f.run_id) if config_hash is not None else ""
    if found and found != f.config_hash:
        f = replace(f, config_hash=found)
    if identity is None or (f.host == identity.host and f.labels == identity.labels):
        return f
    return replace(f, host=identity.host, labels=identity.labels)


def config_name(series: str, configured: Collection[str]) -> str | None:
    """The configured source a series belongs to (a glob's files are ``name:file``)."""
    if series in configured:
        return series
    return next((n for n in configured if series.startswith(n + ":")), None)


def _paged(raw: Any) -> frozenset[Episode] | None:
    """``announced.paged``: [[key, first_seen or null], …]; absent (None) in older checkpoints."""
    if raw is None:
        return None
    out: set[Episode] = set()
    for i, row in enumerate(_list(raw, "announced.paged")):
        if not isinstance(row, list) or len(row) != 2 or not (row[1] is None or isinstance(row[1], str)):
            raise WrongShape(f"announced.paged[{i}]", "not [key, first_seen or null]")
        out.add((as_str(row[0], f"announced.paged[{i}][0]"), row[1]))
    return frozenset(out)


def _list(raw: Any, where: str) -> list[Any]:
    if not isinstance(raw, list):
        raise WrongShape(where, "not a list")
    return raw
