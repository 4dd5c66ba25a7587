"""The detector run over a log read to its end, as the agent would run it live."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from typing import IO, TYPE_CHECKING

from acceptmon.ingest import Pipeline
from acceptmon.model import DecodeSample, Finding, Record, Run, SpecSample
from acceptmon.runs.batch import DecodeBatch

if TYPE_CHECKING:
    from acceptmon.detect import DetectSettings


class FindingLog:
    """Runs the detector as the agent would live, evaluated after every interval, keeping each
    finding's latest state (so a drop that a later revert resolved is still reported).

    The book tells of each change as it happens, so nothing re-reads it after every interval,
    and Decode batches stay on the detector's bulk path (``Detector.observe_batch``). A drop's
    tokens lost are counted from the lines after the detector has seen them (``detect.cost``)."""

    def __init__(self, pipeline: Pipeline, settings: DetectSettings | None = None) -> None:
        from acceptmon.detect import Detector
        from acceptmon.detect.cost import CostMeter

        self.detector = Detector(settings, on_change=self._changed)
        self.cost = CostMeter()
        self._store = pipeline.store
        self._latest: dict[str, Finding] = {}
        #: Findings that fired, by (rule, source, severity), as the agent counts them.
        self.raised: Counter[tuple[str, str, str]] = Counter()
        self._fired: set[str] = set()
        pipeline.consumers.append(self)

    def _changed(self, finding: Finding) -> None:
        self._latest[finding.key] = finding
        self.cost.note((finding,))
        if finding.active and finding.key not in self._fired:
            self._fired.add(finding.key)
            self.raised[(finding.rule, finding.source, str(finding.severity))] += 1

    @property
    def findings(self) -> dict[str, Finding]:
        """Every finding's latest state by key, in the order they first fired."""
        return {key: self.cost.fill(self._engine(f)) for key, f in self._latest.items()}

    def observe_run_start(self, run: Run) -> None:
        self.detector.observe_run_start(run)
        self.cost.observe_run_start(run)

    def observe(self, record: Record) -> None:
        self.detector.observe(record)
        if isinstance(record, DecodeSample | SpecSample):
            self.detector.evaluate()
        self.cost.observe(record)

    def observe_batch(self, batch: DecodeBatch) -> None:
        self.detector.observe_batch(batch, evaluate=True)
        self.cost.observe_batch(batch)

    def _engine(self, finding: Finding) -> Finding:
        """The finding with its source's inference server (the detector does not know it)."""
        stats = self._store.sources.get(finding.source)
        return replace(finding, engine=stats.engine) if stats is not None and stats.engine else finding

    def write(self, out: IO[str]) -> None:
        from acceptmon.notify.payload import finding_json

        self.detector.evaluate()
        for finding in self.findings.values():
            out.write(json.dumps(finding_json(finding), allow_nan=False, default=str) + "\n")
