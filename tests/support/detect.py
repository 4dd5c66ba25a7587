"""Builders shared by the detector tests (no tests here): runs and deterministic Decode series."""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import datetime, timedelta

from acceptmon.detect import Detector
from acceptmon.model import ConfigDiff, DecodeSample, Finding, Meta, Run, SpecConfig

T0 = datetime(2025, 6, 1, 12, 0, 0)
SETTINGS = SpecConfig(algorithm="EAGLE3", num_steps=3, eagle_topk=1, num_draft_tokens=4)
LAYER_KEY = "draft.eagle_config.eagle_aux_hidden_state_layer_ids"
LAYER_DIFF = ConfigDiff(changed=((LAYER_KEY, [2, 20, 37], [1, 23, 44]),))
REVERT_DIFF = ConfigDiff(changed=((LAYER_KEY, [1, 23, 44], [2, 20, 37]),))


def make_run(rid: str, prev: str | None = None, diff: ConfigDiff | None = None, source: str = "gpu-a") -> Run:
    return Run(source, rid, T0, 0, None, SETTINGS, prev, diff)


class Feed:
    """Feeds a detector deterministic Decode intervals every ``step`` seconds of log time."""

    def __init__(self, det: Detector, source: str = "gpu-a", seed: int = 0, step: float = 2.0) -> None:
        self.det, self.source, self.step = det, source, step
        self.rng = random.Random(seed)
        self.t = T0
        self.lineno = 0

    def sample(self, accept: float | None, running: int = 16, queue: int = 0) -> DecodeSample:
        self.t += timedelta(seconds=self.step)
        self.lineno += 1
        meta = Meta(self.source, self.lineno, self.t)
        return DecodeSample(meta, running, queue, 100.0, accept_len=accept)

    def value(self, level: float, sd: float) -> float:
        return round(min(4.0, max(1.0, self.rng.gauss(level, sd))), 2)

    def decode(
        self,
        level: float | Callable[[int], float],
        n: int,
        running: int | Callable[[int], int] = 16,
        sd: float = 0.2,
    ) -> list[Finding]:
        """``n`` intervals (evaluating after each, as the pipeline does); the last evaluation."""
        found: list[Finding] = []
        for i in range(n):
            r = running(i) if callable(running) else running
            mean = level(r) if callable(level) else level
            self.det.observe(self.sample(self.value(mean, sd), r))
            found = self.det.evaluate(self.t)
        return found

    def after_change(
        self, level: float, n: int, diff: ConfigDiff | None = LAYER_DIFF, before: float = 2.41
    ) -> list[Finding]:
        """Run A at ``before`` for 300 intervals, then run B (``diff``) at ``level`` for ``n``."""
        self.det.observe_run_start(make_run("A", source=self.source))
        self.decode(before, 300)
        self.det.observe_run_start(make_run("B", "A", diff, source=self.source))
        return self.decode(level, n)
