"""The detector run over a log read to its end, as the agent would run it live."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import IO

from acceptmon.ingest import Pipeline
from acceptmon.model import DecodeSample, Finding, Record, Run, SpecSample
from acceptmon.runs.batch import DecodeBatch


class FindingLog:
    """Runs the detector after every interval, as the agent would live, keeping each
    finding's latest state (so a drop that a later revert resolved is still reported)."""

    def __init__(self, pipeline: Pipeline) -> None:
        from acceptmon.detect import Detector

        self.detector = Detector()
        self._store = pipeline.store
        self.findings: dict[str, Finding] = {}
        pipeline.consumers.append(self)

    def observe_run_start(self, run: Run) -> None:
        self.detector.observe_run_start(run)

    def observe(self, record: Record) -> None:
        self.detector.observe(record)
        if isinstance(record, DecodeSample | SpecSample):
            self._evaluate()

    def observe_batch(self, batch: DecodeBatch) -> None:
        self.detector.observe_batch(batch, self._evaluate)

    def _evaluate(self) -> None:
        for finding in self.detector.evaluate():
            self.findings[finding.key] = self._engine(finding)

    def _engine(self, finding: Finding) -> Finding:
        """The finding with its source's inference server (the detector does not know it)."""
        stats = self._store.sources.get(finding.source)
        return replace(finding, engine=stats.engine) if stats is not None and stats.engine else finding

    def write(self, out: IO[str]) -> None:
        from acceptmon.notify.payload import finding_json

        for finding in self.detector.evaluate():
            self.findings[finding.key] = self._engine(finding)
        for finding in self.findings.values():
            out.write(json.dumps(finding_json(finding), allow_nan=False, default=str) + "\n")
