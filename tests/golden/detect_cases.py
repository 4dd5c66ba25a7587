"""The detector's golden cases (issue 12), written deterministically from ``acceptmon.testing.synth``.

    python -m tests.golden.detect_cases      # rewrite their input.log files

Each is a small, format-exact SGLang log; ``test_detect_cases.py`` checks that
the stored logs are what this module writes, so a case can be read here.

- quiet-server-drop: a staging server (one request, a Decode line every few
  minutes) whose draft change lowers accept len 35%: found, against a baseline
  far older than 30 minutes.
- draft-length-change: 4 draft steps → 2 with the same draft (accept len −24%,
  not a regression), then → 6 steps with a worse draft (accept len flat,
  per-token acceptance −23%): one finding, on per-token acceptance.
- workload-swing: a run whose prompt mix swings acceptance ±15% and ends on a
  high; a restart without a config change starts on a low (no finding); the
  next plain restart falls below anything the runs sustained (found).
- adaptive-hard-stretch (issue 23): SGLang's ``--speculative-adaptive`` steps 3 → 1
  through a hard stretch of prompts and back, and again after a plain restart:
  accept len moves with the steps, per-token acceptance does not (no finding).
- adaptive-worse-draft (issue 23): the same server restarted with a worse draft
  (per-token acceptance −30%), the steps swinging 3 ↔ 1: one finding, on per-token
  acceptance, blaming the draft and never the step changes.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

from acceptmon.testing.synth import decode_line, shutdown, stamp, startup

HERE = Path(__file__).parent
T0 = datetime(2025, 6, 2, 9, 0, 0)


def chain_len(alpha: float, k: int) -> float:
    return sum(alpha**i for i in range(k + 1))


class Log:
    """A log being written: the time moves forward with every line."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.ts = T0
        self.lines: list[str] = []

    def start(self, **args: object) -> None:
        self.lines += startup(self.ts, 0, **args)
        self.ts += timedelta(seconds=60)

    def stop(self) -> None:
        self.lines += shutdown(self.ts)
        self.ts += timedelta(seconds=120)

    def decode(
        self, n: int, level: float, gap: tuple[int, int], running: tuple[int, int], sd: float, k: int = 3
    ) -> None:
        rng = self.rng
        for _ in range(n):
            self.ts += timedelta(seconds=rng.randint(*gap))
            value = max(1.0, min(k + 1.0, rng.gauss(level, sd)))
            self.lines.append(decode_line(self.ts, value, rng.randint(*running), draft_tokens=k + 1))


def quiet_server_drop() -> Iterator[str]:
    log = Log(12_1)
    log.start()
    log.decode(150, 2.6, (60, 300), (1, 1), 0.3)
    log.stop()
    log.start(speculative_draft_model_path="/models/Qwen3-32B-EAGLE3-v2")
    log.decode(40, 2.6 * 0.65, (60, 300), (1, 1), 0.3)
    yield from log.lines


def _steps(k: int) -> dict[str, object]:
    return {"speculative_num_steps": k, "speculative_num_draft_tokens": k + 1}


def draft_length_change() -> Iterator[str]:
    log = Log(12_2)
    busy = (1, 2), (8, 40)
    log.start(**_steps(4))
    log.decode(150, chain_len(0.75, 4), *busy, 0.15, 4)
    log.stop()
    log.start(**_steps(2))
    log.decode(150, chain_len(0.75, 2), *busy, 0.12, 2)
    log.stop()
    log.start(**_steps(6), speculative_draft_model_path="/models/Qwen3-32B-EAGLE3-small")
    log.decode(60, chain_len(0.577, 6), *busy, 0.12, 6)
    yield from log.lines


def workload_swing() -> Iterator[str]:
    log = Log(12_3)
    slow = (9, 11), (16, 60)  # one load stratum: blocks of it are the phases
    log.start()
    for n, level in ((100, 2.6), (100, 2.6 * 0.85), (200, 2.6 * 1.15)):
        log.decode(n, level, *slow, 0.15)
    log.stop()
    log.start()
    log.decode(100, 2.6 * 0.85, *slow, 0.15)
    log.stop()
    log.start()
    log.decode(40, 1.5, *slow, 0.1)
    yield from log.lines


def adaptive_decode(log: Log, alphas: list[tuple[int, float]], k: int) -> int:
    """Adaptive decode: (intervals, α) stretches; the steps follow α as SGLang's controller would
    (1 below α 0.6, else 3), each change logged as it logs it. Returns the steps at the end."""
    busy = (1, 2), (8, 40)
    for n, alpha in alphas:
        want = 1 if alpha < 0.6 else 3
        if want != k:
            ema = chain_len(alpha, k)
            log.lines.append(
                f"[{stamp(log.ts)} TP0] Adaptive spec params updated: steps {k} -> {want} (ema_accept_len={ema:.2f})"
            )
            k = want
        log.decode(n, chain_len(alpha, k), *busy, 0.1, k)
    return k


def adaptive_hard_stretch() -> Iterator[str]:
    log = Log(23_1)
    log.start(speculative_adaptive=True)
    adaptive_decode(log, [(150, 0.7), (80, 0.58), (100, 0.7), (60, 0.57)], 3)
    log.stop()
    log.start(speculative_adaptive=True)
    adaptive_decode(log, [(60, 0.56), (60, 0.7), (60, 0.57), (60, 0.7)], 3)
    yield from log.lines


def adaptive_worse_draft() -> Iterator[str]:
    log = Log(23_2)
    log.start(speculative_adaptive=True)
    adaptive_decode(log, [(150, 0.75), (60, 0.62), (100, 0.75)], 3)
    log.stop()
    log.start(speculative_adaptive=True, speculative_draft_model_path="/models/Qwen3-32B-EAGLE3-small")
    adaptive_decode(log, [(30, 0.61), (40, 0.5), (40, 0.62), (40, 0.5)], 3)
    yield from log.lines


CASES = {
    "adaptive-hard-stretch": adaptive_hard_stretch,
    "adaptive-worse-draft": adaptive_worse_draft,
    "quiet-server-drop": quiet_server_drop,
    "draft-length-change": draft_length_change,
    "workload-swing": workload_swing,
}


def text(case: str) -> str:
    return "\n".join(CASES[case]()) + "\n"


if __name__ == "__main__":
    for name in CASES:
        (HERE / name).mkdir(exist_ok=True)
        (HERE / name / "input.log").write_text(text(name))
