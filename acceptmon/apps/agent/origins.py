"""What the stages ask the agent about a source: its log-time zone, its draft model's
config.json, its declared speculative settings, and which configured source it is.

The run tracker and the pipeline know series by name only (a glob's files are
``name:file``); the answers depend on the source's settings (an SSH host, a
timezone, an ``hf_home``), which only the agent holds.
"""

from __future__ import annotations

import logging
import os
from dataclasses import replace
from datetime import datetime, tzinfo
from typing import Any

from acceptmon import log_time
from acceptmon.apps.agent.announce import config_name
from acceptmon.ingest import Pipeline
from acceptmon.labels import SourceIdentity
from acceptmon.model import Run, SpecConfig
from acceptmon.runs.draft_config import parse_config, read_draft_config, read_local
from acceptmon.settings.sources import SourceSettings
from acceptmon.sources import hub_of, remote_reader
from acceptmon.sources.base import Source
from acceptmon.sources.container.tree import map_path
from acceptmon.text import redact

log = logging.getLogger("acceptmon.agent")


class Origins:
    """Per-source answers over the agent's configured sources (shared, not copied)."""

    def __init__(self, sources: dict[str, tuple[SourceSettings, Source]]) -> None:
        self.sources = sources
        #: Host and user labels per source (and per file of a glob), stamped onto its findings.
        self.identities: dict[str, SourceIdentity] = {}
        #: The store's host per series (a glob's file takes its source's host when first seen).
        self.hosts: dict[str, str] = {}
        self.zones: dict[str, tzinfo] = {}
        #: Sources whose current run's draft config.json could not be found (a gauge).
        self.draft_missing: dict[str, bool] = {}
        self._draft_warned: set[tuple[str, str]] = set()
        self._unknown_warned: set[str] = set()

    def add(self, cfg: SourceSettings, source: Source) -> None:
        """Follow ``source`` as ``cfg.name``; its findings and series carry its host and labels."""
        self.sources[cfg.name] = (cfg, source)
        identity = SourceIdentity.of(cfg.path, cfg.option("host"), dict(cfg.option("labels") or ()))
        if cfg.kind in ("kubernetes", "docker"):
            identity = container_identity(cfg, identity)
        self.identities[cfg.name] = identity
        self.hosts[cfg.name] = identity.host
        log.info("following %s as source '%s'", cfg.path, cfg.name)

    def remove(self, name: str) -> None:
        """Stop following ``name`` (its position stays in the checkpoint, its labels for its findings)."""
        _, source = self.sources.pop(name)
        source.close()
        self.zones.pop(name, None)  # a changed timezone: looked up afresh

    def entry(self, source: str) -> tuple[SourceSettings, Source] | None:
        """The configured source a record's ``source`` came from (a glob's is ``name:file``)."""
        name = config_name(source, self.sources)
        return self.sources[name] if name is not None else None

    def zone(self, name: str) -> tzinfo:
        """The zone of a source's log times, worked out once, at its first chunk."""
        tz = self.zones.get(name)
        if tz is None:
            configured = config_name(name, self.sources)
            entry = self.sources.get(configured) if configured else None
            if configured and configured != name and configured in self.identities:
                # One file of a glob or one workload: the series carries its source's host and labels.
                self.identities[name] = self.identities[configured]
                self.hosts[name] = self.identities[configured].host
                self._workload_labels(name)
            if entry is None:
                tz = log_time.host_zone()
            else:
                cfg, source = entry
                remote = remote_reader(cfg, source)
                tz = log_time.source_zone(cfg.option("timezone"), remote)
            self.zones[name] = tz
            log.info("source '%s': log times are in %s", name, log_time.zone_name(tz))
        return tz

    def read_draft(self, source: str, draft_path: str, _started: datetime | None) -> dict[str, Any] | None:
        """The run's draft config.json where the log lives, read now (live, the start is now);
        a miss is one WARNING and a gauge."""
        entry = self.entry(source)
        container = entry is not None and entry[0].kind in ("kubernetes", "docker")
        if entry is not None and entry[0].kind == "ssh":
            fetched = entry[1].remote_files.draft(draft_path)  # type: ignore[attr-defined]
            found = parse_config(fetched[1], fetched[0]) if fetched else None
        elif entry is not None and container:
            # server_args names the path inside the container; path_map says where it is here.
            mapped = map_path(draft_path, entry[0].option("path_map"))
            found = read_draft_config(mapped, read_local, hub_of(entry[0])) if mapped != draft_path else None
        else:
            found = read_draft_config(draft_path, read_local, hub_of(entry[0]) if entry else None)
        self.draft_missing[source] = found is None
        if found is None and (source, draft_path) not in self._draft_warned:
            self._draft_warned.add((source, draft_path))
            hint = (
                "map the container's path to where it is on this node with the source's path_map"
                if container
                else "set hf_home for a Hugging Face cache elsewhere"
            )
            log.warning(
                "%s: no config.json found for draft model %s; changes inside it cannot be seen (%s)",
                source,
                redact.redact_text(draft_path, harmless=True),
                hint,
            )
        return found

    def _workload_labels(self, series: str) -> None:
        """A workload's series carries its current instance's namespace, pod and container."""
        entry = self.entry(series)
        configured = config_name(series, self.sources)
        labels_of = getattr(entry[1], "identity", None) if entry else None
        if labels_of is None or configured is None or configured not in self.identities:
            return
        base = self.identities[configured]
        merged = dict(base.labels) | dict(labels_of(series))
        self.identities[series] = replace(base, labels=tuple(sorted(merged.items())))

    def note_run(self, run: Run) -> None:
        """Warn once per source when a run's speculative settings are unknown (rates then are
        too); a workload's new run may be another pod's: its labels are looked up again."""
        if run.source in self.identities:
            self._workload_labels(run.source)
        if run.config is None and run.spec.slots is None and run.source not in self._unknown_warned:
            self._unknown_warned.add(run.source)
            log.warning(
                "%s: no server_args line seen for this run (rotated away, or read from the end): accept "
                "rates cannot be normalised; declare the source's speculative: {num_steps, "
                "num_draft_tokens, topk} (acceptmon_run_settings_unknown is 1 meanwhile)",
                run.source,
            )

    def declared(self, source: str) -> SpecConfig | None:
        """The source's ``speculative:`` settings, for a run whose start line was never seen."""
        entry = self.entry(source)
        spec = entry[0].speculative() if entry else {}
        if not spec:
            return None
        steps, topk = spec.get("num_steps"), spec.get("topk")
        tokens = spec.get("num_draft_tokens") or (steps + 1 if steps and (topk or 1) == 1 else None)
        return SpecConfig("declared", steps, topk, tokens)


def container_identity(cfg: SourceSettings, identity: SourceIdentity) -> SourceIdentity:
    """A container source's host is its node (``host:``, else the downward API's ``NODE_NAME``,
    else this machine's name); a ``kubernetes:`` source's series carry it as ``node`` too."""
    host = cfg.option("host") or os.environ.get("NODE_NAME", "").strip() or identity.host
    labels = dict(identity.labels) | ({"node": host} if cfg.kind == "kubernetes" else {})
    return SourceIdentity(host, tuple(sorted(labels.items())))


def new_segments(pipeline: Pipeline, watched: dict[str, Any]) -> list[Run]:
    """A watched file changed without a restart (a draft config.json edit waits for one): the
    segments it opened, handed to the pipeline's consumers; the caller handles them after."""
    opened = []
    for source in pipeline.tracker.sources():
        run = pipeline.tracker.new_segment(source, watched)
        if run is not None:
            log.warning("config of %s changed without a restart: new segment %s", source, run.run_id)
            pipeline.run_started(run)
            opened.append(run)
    return opened
