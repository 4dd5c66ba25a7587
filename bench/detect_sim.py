"""Labelled synthetic SGLang Decode series for bench/detect_eval.py.

A simulated server has a per-run accept-len level (2–3, noise sd ≈ 0.25 with
t(4) tails, larger at small batches), a diurnal load (#running-req 1–64 with
a queue at the peak, idle gaps at night) that lowers acceptance weakly
(−1.2% per doubling of the batch), prompt-mix shifts of ±5–8% lasting hours,
and Decode lines every ~1–3 s while busy. Streams yield ``Run``s,
``DecodeSample``s and ``Truth`` markers that say where a real problem starts.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from acceptmon.model import ConfigDiff, ConfigSnapshot, DecodeSample, Meta, Run, Shutdown, SpecConfig

T0 = datetime(2025, 6, 2)
DAY = 86_400.0
SETTINGS = SpecConfig(algorithm="EAGLE3", num_steps=3, eagle_topk=1, num_draft_tokens=4)
LAYERS = "draft.eagle_config.eagle_aux_hidden_state_layer_ids"
BENIGN = "server_args.max_running_requests"


@dataclass(frozen=True)
class Truth:
    """A labelled problem: which rule should catch it, in which run, from when (sim seconds)."""

    rule: str
    run_id: str
    size: float
    onset: float


Item = Run | DecodeSample | Shutdown | Truth
#: (seconds since the run start, intervals since the run start) → level multiplier
Shape = Callable[[float, int], float]


class Server:
    """One simulated server; time ``t`` is seconds since ``T0``."""

    def __init__(self, rng: random.Random, source: str, level: float) -> None:
        self.rng, self.source, self.level = rng, source, level
        self.scale = rng.uniform(0.7, 1.4)
        self.t = 0.0
        self.runs = 0
        self.lineno = 0
        self.running = 0
        self.collapsed = False  # speculation off: nothing accepted, whatever the load or prompts
        self._mix_until, self._mix = 0.0, 1.0
        self.settings = SETTINGS
        self.top = 4.0  # the largest accept len: draft steps + 1

    def load(self, t: float) -> float:
        """Mean #running-req: ~1 at 04:00, up to ~70 in the afternoon."""
        hour = (t % DAY) / 3600
        return self.scale * (0.6 + 50 * ((1 - math.cos(2 * math.pi * (hour - 4) / 24)) / 2) ** 2)

    def mix(self, t: float) -> float:
        """Prompt-mix level: episodes of ±5–8% for 1–6 hours, each followed by a spell at the
        normal level (a shift is a move away from normal, never straight from +8% to −8%)."""
        if t >= self._mix_until:
            rng = self.rng
            self._mix_until = t + rng.uniform(3600, 6 * 3600)
            shifted = self._mix == 1.0 and rng.random() < 0.6
            self._mix = 1 + rng.choice((-1, 1)) * rng.uniform(0.05, 0.08) if shifted else 1.0
        return self._mix

    def start(self, diff: ConfigDiff | None, prev: str | None) -> Run:
        self.runs += 1
        rid = f"{self.source}#{self.runs}"
        return Run(self.source, rid, self.when(self.t), 0, None, self.settings, prev, diff)

    def when(self, t: float) -> datetime:
        return T0 + timedelta(seconds=t)

    def sample(self, level: float, warm: int, backlog: int) -> DecodeSample:
        """One Decode interval at the current time; ``warm`` > 0 during the start-up burst."""
        rng, lam = self.rng, self.load(self.t)
        want = lam * rng.lognormvariate(0, 0.25) + backlog
        running = max(1, min(64, round(want)))
        queued = max(0, round(want - 64))
        mean = self.mean(level, running)
        sd = 0.25 * min(1.5, max(0.6, (8 / running) ** 0.25)) * (1.5 if warm else 1.0)
        sd *= min(1.0, (mean - 1) / 1.2)  # nothing accepted has no spread
        noise = rng.gauss(0, 1) / math.sqrt(rng.gammavariate(2, 2) / 4) / math.sqrt(2)
        accept = round(min(self.top, max(1.0, mean + sd * noise)), 2)
        if self.collapsed:
            accept = round(1.0 + abs(rng.gauss(0, 0.01)), 2)
        self.lineno += 1
        self.running = running
        meta = Meta(self.source, self.lineno, self.when(self.t))
        self.t += self.gap(running)
        return DecodeSample(meta, running, queued, 100.0 * running, accept_len=accept)

    def mean(self, level: float, running: int) -> float:
        """Mean accept len of an interval: the level, moved by the prompt mix and the batch size."""
        return level * self.mix(self.t) * (1 - 0.012 * math.log2(running))

    def gap(self, running: int) -> float:
        """Seconds to the next Decode line while busy."""
        return 0.8 + 0.035 * running + self.rng.random() * 0.6

    def decode(
        self, shape: Shape, until: float | None = None, count: int | None = None, fresh: bool = True
    ) -> Iterator[Item]:
        """Decode lines until time ``until`` or ``count`` lines, idling at night; a fresh run starts
        with a queued backlog and noisier intervals."""
        start, n, backlog = self.t, 0, self.rng.randint(10, 120) if fresh else 0
        while (until is None or self.t < until) and (count is None or n < count):
            lam = self.load(self.t)
            # Decode lines stop only once the batch has drained to a request or two.
            if lam < 3 and self.running <= 2 and self.rng.random() < 0.01 * (3 - lam):
                self.t += self.rng.expovariate(1 / (200 * (3 - lam)))
                continue
            warm = max(0, 6 - n) if fresh else 0
            yield self.sample(self.level * shape(self.t - start, n), warm, backlog if warm else 0)
            backlog //= 2
            n += 1

    def restart(self, diff: ConfigDiff | None, prev: str) -> tuple[Shutdown, Run]:
        """A deliberate restart: SIGTERM, 1–5 minutes of loading, a new run."""
        self.lineno += 1
        stop = Shutdown(Meta(self.source, self.lineno, self.when(self.t)), "SIGTERM received")
        self.t += self.rng.uniform(60, 300)
        return stop, self.start(diff, prev)


def flat(_t: float, _n: int) -> float:
    return 1.0


def clean(seed: int, source: str, level: float, days: float) -> Iterator[Item]:
    """Server-days with no real change: load swings, mix shifts, restarts (a third with a benign diff)."""
    rng = random.Random(seed)
    srv = Server(rng, source, level)
    srv.t = rng.uniform(0, DAY)
    end = srv.t + days * DAY
    run = srv.start(None, None)
    yield run
    while srv.t < end:
        yield from srv.decode(flat, until=min(end, srv.t + rng.expovariate(1 / DAY)))
        if srv.t < end:
            benign = ConfigDiff(changed=((BENIGN, 64, 48),)) if rng.random() < 1 / 3 else ConfigDiff()
            srv.level *= rng.uniform(0.98, 1.02)
            stop, run = srv.restart(benign, run.run_id)
            yield from (stop, run)


def _first_run(rng: random.Random, srv: Server, hours: tuple[float, float] = (0, 24)) -> Run:
    srv.t = rng.uniform(*hours) * 3600
    return srv.start(None, None)


def change(seed: int, source: str, level: float, drop: float, rule: str, after: int = 400) -> Iterator[Item]:
    """A baseline run, then a restart with a draft-config change that lowers accept len by ``drop``."""
    rng = random.Random(seed)
    srv = Server(rng, source, level)
    base = _first_run(rng, srv)
    yield base
    yield from srv.decode(flat, count=rng.randint(800, 2500))
    stop, run = srv.restart(ConfigDiff(changed=((LAYERS, [2, 20, 37], [1, 23, 44]),)), base.run_id)
    yield from (stop, run)
    yield Truth(rule, run.run_id, drop, srv.t)
    srv.level = max(1.0, srv.level * (1 - drop))
    srv.collapsed = rule == "speculation_collapsed"
    yield from srv.decode(flat, count=after)


def drift(seed: int, source: str, level: float, drop: float) -> Iterator[Item]:
    """One run whose accept len slides down by ``drop`` over 10–40 minutes and stays there."""
    rng = random.Random(seed)
    srv = Server(rng, source, level)
    run = _first_run(rng, srv)
    yield run
    onset_n, ramp_n = rng.randint(400, 1200), rng.randint(300, 1200)

    def shape(_t: float, n: int) -> float:
        return 1 - drop * min(1.0, max(0.0, (n - onset_n) / ramp_n))

    yield from srv.decode(shape, count=onset_n)
    yield Truth("acceptance_drift", run.run_id, drop, srv.t)
    yield from srv.decode(lambda t, n: shape(t, n + onset_n), count=ramp_n + 600, fresh=False)


def stall(seed: int, source: str, level: float) -> Iterator[Item]:
    """A busy server whose Decode lines stop for 5–20 minutes, then resume."""
    rng = random.Random(seed)
    srv = Server(rng, source, level)
    srv.scale = rng.uniform(1.0, 1.4)
    run = _first_run(rng, srv, (9, 20))  # at night a hang looks like idleness: see stall_reason
    yield run
    yield from srv.decode(flat, count=rng.randint(100, 600))
    yield Truth("log_stalled", run.run_id, 0.0, srv.t)
    srv.t += rng.uniform(300, 1200)
    yield from srv.decode(flat, count=50)


# -- harder cases (issue 12) -----------------------------------------------------------------

STEPS = "server_args.speculative_num_steps"
DRAFT_TOKENS = "server_args.speculative_num_draft_tokens"
DRAFT_PATH = "server_args.speculative_draft_model_path"


def chain_len(alpha: float, k: int) -> float:
    """Accept len of a chain draft of ``k`` steps at per-token acceptance α."""
    return sum(alpha**i for i in range(k + 1))


def alpha_for(length: float, k: int) -> float:
    """The α whose chain of ``k`` steps has accept len ``length``."""
    lo, hi = 0.0, 1.0
    for _ in range(50):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if chain_len(mid, k) < length else (lo, mid)
    return (lo + hi) / 2


def chain_settings(k: int) -> SpecConfig:
    return SpecConfig(algorithm="EAGLE3", num_steps=k, eagle_topk=1, num_draft_tokens=k + 1)


class Quiet(Server):
    """A dev or staging server: one request at a time, a Decode line every few minutes."""

    def load(self, t: float) -> float:
        return 0.7 * self.scale

    def gap(self, running: int) -> float:
        return 30 + self.rng.expovariate(1 / 150)


class Chain(Server):
    """A chain draft of ``steps`` steps: ``level`` is the per-token acceptance α, and the prompt
    mix and the batch size move α (accept len follows as Σ αⁱ)."""

    def __init__(self, rng: random.Random, source: str, alpha: float, steps: int) -> None:
        super().__init__(rng, source, alpha)
        self.steps(steps)

    def steps(self, k: int) -> None:
        self.settings, self.top = chain_settings(k), float(k + 1)

    def mean(self, level: float, running: int) -> float:
        k = self.settings.num_steps or 1
        return chain_len(min(1.0, super().mean(level, running)), k)


class Swinging(Server):
    """A prompt mix that moves acceptance ±12–15% for 1–4 hours at a time, alternating."""

    def __init__(self, rng: random.Random, source: str, level: float) -> None:
        super().__init__(rng, source, level)
        self.sign = rng.choice((-1, 1))
        self.since = 0.0  # when the current episode began

    def mix(self, t: float) -> float:
        if t >= self._mix_until:
            self._mix_until = t + self.rng.uniform(3600, 4 * 3600)
            self.sign, self.since = -self.sign, t
            self._mix = 1 + self.sign * self.rng.uniform(0.12, 0.15)
        return self._mix

    def flip(self) -> None:
        """End the episode now: the next interval starts the opposite one."""
        self._mix_until = self.t


def quiet_drop(seed: int, source: str, level: float, drop: float) -> Iterator[Item]:
    """A quiet server's run of 60–300 intervals, then a draft change that lowers accept len by ``drop``."""
    rng = random.Random(seed)
    srv = Quiet(rng, source, level)
    base = _first_run(rng, srv)
    yield base
    yield from srv.decode(flat, count=rng.randint(60, 300), fresh=False)
    stop, run = srv.restart(ConfigDiff(changed=((LAYERS, [2, 20, 37], [1, 23, 44]),)), base.run_id)
    yield from (stop, run)
    yield Truth("acceptance_drop_after_change", run.run_id, drop, srv.t)
    srv.level = max(1.0, srv.level * (1 - drop))
    yield from srv.decode(flat, count=150, fresh=False)


def quiet_clean(seed: int, source: str, level: float, days: float) -> Iterator[Item]:
    """A quiet server's days with no real change: restarts every 50–400 intervals."""
    rng = random.Random(seed)
    srv = Quiet(rng, source, level)
    srv.t = rng.uniform(0, DAY)
    end = srv.t + days * DAY
    run = srv.start(None, None)
    yield run
    while srv.t < end:
        yield from srv.decode(flat, count=rng.randint(50, 400), fresh=False)
        if srv.t < end:
            benign = ConfigDiff(changed=((BENIGN, 64, 48),)) if rng.random() < 1 / 3 else ConfigDiff()
            stop, run = srv.restart(benign, run.run_id)
            yield from (stop, run)


def _steps_diff(k1: int, k2: int, worse: bool) -> ConfigDiff:
    changed: tuple[tuple[str, object, object], ...] = ((STEPS, k1, k2), (DRAFT_TOKENS, k1 + 1, k2 + 1))
    if worse:
        changed += ((DRAFT_PATH, "/models/draft-a", "/models/draft-b"),)
    return ConfigDiff(changed=changed)


def steps_change(seed: int, source: str, _level: float, _param: float) -> Iterator[Item]:
    """A draft-length change with the draft model unchanged (e.g. 5 steps → 3): not a regression."""
    rng = random.Random(seed)
    k1 = rng.randint(3, 6)
    k2 = rng.choice([k for k in range(2, 7) if abs(k - k1) >= 2])
    srv = Chain(rng, source, rng.uniform(0.6, 0.85), k1)
    base = _first_run(rng, srv)
    yield base
    yield from srv.decode(flat, count=rng.randint(800, 2500))
    srv.steps(k2)
    stop, run = srv.restart(_steps_diff(k1, k2, False), base.run_id)
    yield from (stop, run)
    yield from srv.decode(flat, count=400)


def hidden_drop(seed: int, source: str, _level: float, _param: float) -> Iterator[Item]:
    """A worse draft behind a longer one: steps k → k + 2..4 with α lowered so accept len stays flat."""
    rng = random.Random(seed)
    k1 = rng.randint(2, 3)
    k2 = k1 + rng.randint(2, 4)
    a1 = rng.uniform(0.65, 0.85)
    a2 = alpha_for(chain_len(a1, k1), k2)
    srv = Chain(rng, source, a1, k1)
    base = _first_run(rng, srv)
    yield base
    yield from srv.decode(flat, count=rng.randint(800, 2500))
    srv.steps(k2)
    stop, run = srv.restart(_steps_diff(k1, k2, True), base.run_id)
    yield from (stop, run)
    yield Truth("acceptance_drop_after_change", run.run_id, 1 - a2 / a1, srv.t)
    srv.level = a2
    yield from srv.decode(flat, count=400)


def swinging(seed: int, source: str, level: float, days: float) -> Iterator[Item]:
    """Restarts without a config change on a server whose prompt mix swings ±15% for hours,
    each timed at its worst: the old run ends 40+ minutes into a high, the new one starts low."""
    rng = random.Random(seed)
    srv = Swinging(rng, source, level)
    srv.t = rng.uniform(0, DAY)
    end = srv.t + days * DAY
    run = srv.start(None, None)
    yield run
    while srv.t < end:
        yield from srv.decode(flat, until=min(end, srv.t + rng.uniform(8, 24) * 3600))
        while srv.t < end and not (srv.sign > 0 and srv.t - srv.since > 2400):
            yield from srv.decode(flat, count=50, fresh=False)
        if srv.t < end:
            srv.flip()
            stop, run = srv.restart(ConfigDiff(), run.run_id)
            yield from (stop, run)


def swing_drop(seed: int, source: str, level: float, drop: float) -> Iterator[Item]:
    """The swinging server's worst-timed plain restart, and acceptance ``drop`` below even the low."""
    rng = random.Random(seed)
    srv = Swinging(rng, source, level)
    base = _first_run(rng, srv)
    yield base
    yield from srv.decode(flat, until=srv.t + rng.uniform(8, 24) * 3600)
    while not (srv.sign > 0 and srv.t - srv.since > 2400):
        yield from srv.decode(flat, count=50, fresh=False)
    srv.flip()
    stop, run = srv.restart(ConfigDiff(), base.run_id)
    yield from (stop, run)
    yield Truth("acceptance_drop_after_change", run.run_id, drop, srv.t)
    srv.level *= 1 - drop
    yield from srv.decode(flat, count=400)


# -- adaptive speculation and tree drafts (issue 23) ----------------------------------------

ADAPTIVE_ARGS = ConfigSnapshot(server_args={"speculative_adaptive": True})


class Adaptive(Chain):
    """SGLang's ``--speculative-adaptive`` on a chain draft: an EMA of accept len moves the steps
    between 1 and 3 (down when a 3-step round accepts under 2.0, up when a 1-step round accepts
    over 1.62), at most once per 40 intervals; the prompt mix moves α ±15–25% for hours."""

    def __init__(self, rng: random.Random, source: str, alpha: float) -> None:
        super().__init__(rng, source, alpha, 3)
        self.ema, self.dwell = chain_len(alpha, 3), 0
        self.switches: list[tuple[int, int]] = []  # step changes not yet yielded

    def mix(self, t: float) -> float:
        if t >= self._mix_until:
            rng = self.rng
            self._mix_until = t + rng.uniform(1800, 4 * 3600)
            hard = self._mix == 1.0 and rng.random() < 0.6
            self._mix = 1 - rng.uniform(0.15, 0.25) if hard else 1.0
        return self._mix

    def sample(self, level: float, warm: int, backlog: int) -> DecodeSample:
        out = super().sample(level, warm, backlog)
        k, length = self.settings.num_steps or 1, out.accept_len or 1.0
        self.ema, self.dwell = 0.9 * self.ema + 0.1 * length, self.dwell + 1
        target = 1 if k == 3 and self.ema < 2.0 else 3 if k == 1 and self.ema > 1.62 else k
        if target != k and self.dwell >= 40:
            self.steps(target)
            self.switches.append((k, target))
            self.dwell = 0
        return out

    def start(self, diff: ConfigDiff | None, prev: str | None) -> Run:
        return replace(super().start(diff, prev), config=ADAPTIVE_ARGS)

    def run_adaptive(self, run: Run, count: int | None = None, until: float | None = None) -> Iterator[Item]:
        """Decode lines, each step change yielded as the ``spec_params`` segment the run tracker opens."""
        prev = run.run_id
        for item in self.decode(flat, until=until, count=count, fresh=False):
            yield item
            while self.switches:
                a, b = self.switches.pop(0)
                self.runs += 1
                seg = Run(
                    self.source,
                    f"{self.source}#{self.runs}",
                    self.when(self.t),
                    0,
                    ADAPTIVE_ARGS,
                    self.settings,
                    prev,
                    _steps_diff(a, b, False),
                    "spec_params",
                    f"steps {a} -> {b}",
                )
                prev = seg.run_id
                yield seg


def adaptive_clean(seed: int, source: str, _level: float, days: float) -> Iterator[Item]:
    """Adaptive steps swinging 3 ↔ 1 with hard stretches of prompts, plain restarts, no change."""
    rng = random.Random(seed)
    srv = Adaptive(rng, source, rng.uniform(0.55, 0.75))
    srv.t = rng.uniform(0, DAY)
    end = srv.t + days * DAY
    run = srv.start(None, None)
    yield run
    while srv.t < end:
        yield from srv.run_adaptive(run, until=min(end, srv.t + rng.expovariate(1 / DAY)))
        if srv.t < end:
            srv.steps(3)
            srv.switches.clear()
            stop, run = srv.restart(ConfigDiff(), run.run_id)
            yield from (stop, run)


def adaptive_drop(seed: int, source: str, _level: float, drop: float) -> Iterator[Item]:
    """An adaptive server restarted with a worse draft: α ``drop`` lower, the steps swinging 3 ↔ 1."""
    rng = random.Random(seed)
    srv = Adaptive(rng, source, rng.uniform(0.6, 0.8))
    base = _first_run(rng, srv)
    yield base
    yield from srv.run_adaptive(base, count=rng.randint(800, 2500))
    diff = ConfigDiff(changed=((DRAFT_PATH, "/models/draft-a", "/models/draft-b"),))
    srv.steps(3)
    srv.switches.clear()
    stop, run = srv.restart(diff, base.run_id)
    yield from (stop, run)
    yield Truth("acceptance_drop_after_change", run.run_id, drop, srv.t)
    srv.level *= 1 - drop
    yield from srv.run_adaptive(run, count=400)


def tree_settings(tokens: int) -> SpecConfig:
    return SpecConfig(algorithm="EAGLE3", num_steps=5, eagle_topk=4, num_draft_tokens=tokens)


def tree_change(seed: int, source: str, level: float, drop: float, worse: bool) -> Iterator[Item]:
    """A tree draft (topk 4) verifying 8 → 6 tokens: accept len 10–18% lower with the same draft
    (the change explains it); with ``worse`` a worse draft as well, accept len ``drop`` lower still."""
    rng = random.Random(seed)
    srv = Server(rng, source, level + 1.0)
    srv.settings, srv.top = tree_settings(8), 8.0
    base = _first_run(rng, srv)
    yield base
    yield from srv.decode(flat, count=rng.randint(800, 2500))
    changed: tuple[tuple[str, object, object], ...] = ((DRAFT_TOKENS, 8, 6),)
    if worse:
        changed += ((DRAFT_PATH, "/models/draft-a", "/models/draft-b"),)
    srv.settings, srv.top = tree_settings(6), 6.0
    stop, run = srv.restart(ConfigDiff(changed=changed), base.run_id)
    yield from (stop, run)
    fewer = rng.uniform(0.10, 0.18)
    if worse:
        yield Truth("acceptance_drop_after_change", run.run_id, drop, srv.t)
    srv.level *= (1 - fewer) * (1 - drop if worse else 1.0)
    yield from srv.decode(flat, count=400)
