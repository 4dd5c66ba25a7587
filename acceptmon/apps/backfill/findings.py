"""Findings in history: at each sample time T, the finding series a live agent served at T.

The agent's detector takes the log's runs, records and Decode lines, and its findings
are evaluated when it has read the lines logged up to T (by the log's own time, so a
backlog never looks stalled). Here the detector takes a Decode batch in the very parts
the sampler stores it in, so at a sample it has seen exactly the lines the store holds;
the source is evaluated there and its findings become the agent's families
(``ingest/families.finding_metrics``): opened when first seen, 0 once resolved, with the
labels the agent gives them (engine, host, the run's config hash).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from acceptmon.detect import Detector
from acceptmon.ingest import Pipeline
from acceptmon.ingest.families import finding_metrics
from acceptmon.metrics.collect import BY_NAME, MetricDef, SourceSample
from acceptmon.model import Finding, Record, Run
from acceptmon.runs.batch import DecodeBatch


class HistoryFindings:
    """A pipeline consumer of runs and records; Decode batches come in the sampler's parts."""

    def __init__(self, pipeline: Pipeline) -> None:
        # As the agent's: an ending run is judged before the next one starts.
        self.detector = Detector(judge_ending_runs=True)
        self._pipeline = pipeline
        self._fired: set[str] = set()
        self.raised: dict[tuple[str, str, str], int] = {}
        #: Per source: what its last sample's finding families were made of, and them.
        self._last: dict[str, tuple[Any, list[tuple[MetricDef, list[SourceSample]]]]] = {}
        #: A finding's key → the finding, the config hash it was given, and the copy with it.
        self._identified: dict[str, tuple[Finding, str, Finding]] = {}
        pipeline.consumers.append(self)

    def observe_run_start(self, run: Run) -> None:
        self.detector.observe_run_start(run)
        judged = self.detector.judged(run)
        if judged is not None:  # the ending run's verdict, counted as the agent announces it
            self._raise(judged)

    def observe(self, record: Record) -> None:
        self.detector.observe(record)

    def observe_batch(self, batch: DecodeBatch) -> None:
        """Nothing: the batch came in parts (``part``) as the store took it."""

    def part(self, batch: DecodeBatch) -> None:
        self.detector.observe_batch(batch)

    def families(self, source: str) -> list[tuple[MetricDef, list[SourceSample]]]:
        """The finding families of ``source`` as the agent serves them now (the last sample's
        again while its findings have not changed: a finding stays open for days of samples)."""
        found = [self._identify(f) for f in self.detector.evaluate(source=source) if f.source == source]
        self._raise(found)
        raised = {k: n for k, n in self.raised.items() if k[1] == source}
        if not found and not raised:
            return []
        store = self._pipeline.store
        state = (found, raised, store.hosts.get(source), store.sources[source].engine)
        last = self._last.get(source)
        if last is not None and last[0] == state:
            return last[1]
        engines = {source: state[3]}
        out = [
            (
                BY_NAME[fam.name],
                [(s.name, tuple(s.labels), tuple(s.labels.values()), s.value) for s in fam.samples],
            )
            for fam in finding_metrics(found, raised, store.hosts, engines)
        ]
        self._last[source] = (state, out)
        return out

    def _raise(self, found: list[Finding]) -> None:
        """Count the findings that fire, once each, as ``acceptmon_findings_total`` does."""
        for f in found:
            if f.active and f.key not in self._fired:
                self._fired.add(f.key)
                key = (f.rule, f.source, str(f.severity))
                self.raised[key] = self.raised.get(key, 0) + 1

    def _identify(self, f: Finding) -> Finding:
        """The finding with its run's config hash, as the agent labels it. An open finding is
        the same (frozen) object sample after sample, so its copy is kept while the hash is."""
        run = next((r for r in reversed(self._pipeline.tracker.runs(f.source)) if r.run_id == f.run_id), None)
        found = run.config.hash if run is not None and run.config is not None else ""
        if not found or found == f.config_hash:
            return f
        kept = self._identified.get(f.key)
        if kept is None or kept[0] is not f or kept[1] != found:
            kept = self._identified[f.key] = (f, found, replace(f, config_hash=found))
        return kept[2]
