"""Which measure a run is compared in: accept len, or per-token acceptance when the draft's length changed.

With a chain draft of k steps, accept len = Σ_{i=0..k} αⁱ for a per-token
acceptance α: going from 5 steps to 3 lowers accept len ~15% with the same
draft model, and a worse draft can hide behind a longer one (accept len flat,
α down). So when the draft's shape (steps, draft tokens, topk) differs between
the baseline run and the current one, both sides are turned into α under the
chain model and α is compared. A tree draft (topk > 1) has no such model: then
accept len is compared and the finding says the two were not comparable.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from acceptmon.detect.series import Strata
from acceptmon.model import SpecConfig

ACCEPT_LEN = "accept_len"
PER_TOKEN = "per_token_acceptance"

#: α is kept in ten-thousandths in the histograms (accept len is in hundredths).
ALPHA_SCALE = 10_000.0


@dataclass(frozen=True, slots=True)
class Measure:
    """The measure of one comparison, the draft steps of each side, and why (for the finding)."""

    name: str = ACCEPT_LEN
    steps: tuple[int | None, int | None] = (None, None)
    note: str = ""

    @property
    def per_token(self) -> bool:
        return self.name == PER_TOKEN


def chain_len(alpha: float, k: int) -> float:
    """Expected accept len of a chain draft of ``k`` steps: 1 + α + … + αᵏ."""
    return sum(alpha**i for i in range(k + 1))


@lru_cache(maxsize=16_384)
def per_token(centi: int, k: int) -> int:
    """α (in ten-thousandths) whose chain of ``k`` steps has accept len ``centi``/100; clamped to [0, 1]."""
    length = centi / 100
    if length <= 1.0 or k <= 0:
        return 0
    if length >= k + 1:
        return round(ALPHA_SCALE)
    lo, hi = 0.0, 1.0
    for _ in range(40):  # chain_len is increasing in α: bisection to well below 1e-4
        mid = (lo + hi) / 2
        if chain_len(mid, k) < length:
            lo = mid
        else:
            hi = mid
    return round((lo + hi) / 2 * ALPHA_SCALE)


def to_per_token(strata: Strata, k: int) -> Strata:
    """Histograms of accept len (hundredths) as histograms of α (ten-thousandths)."""
    out: Strata = {}
    for bucket, h in strata.items():
        into = out[bucket] = {}
        for value, count in h.items():
            a = per_token(value, k)
            into[a] = into.get(a, 0) + count
    return out


def _shape(s: SpecConfig) -> tuple[int | None, int | None, int | None]:
    return s.num_steps, s.eagle_topk, s.num_draft_tokens


def _words(before: SpecConfig, after: SpecConfig) -> str:
    parts = [
        f"{name} {a} → {b}"
        for name, a, b in zip(("steps", "topk", "draft tokens"), _shape(before), _shape(after), strict=True)
        if a != b
    ]
    return "draft " + ", ".join(parts)


def choose(before: SpecConfig, after: SpecConfig) -> Measure:
    """Accept len unless the draft's shape changed; then α if both sides are chains of known length."""
    if _shape(before) == _shape(after):
        return Measure()
    steps = (before.draft_slots(), after.draft_slots())
    what = _words(before, after)
    topk = max(before.eagle_topk or 1, after.eagle_topk or 1)
    if topk > 1:
        return Measure(
            ACCEPT_LEN,
            steps,
            f"{what}: a tree draft (topk {topk}) has no chain model, so per-token acceptance is not "
            "comparable; accept len compared",
        )
    if steps[0] is None or steps[1] is None:
        return Measure(ACCEPT_LEN, steps, f"{what}: draft length unknown; accept len compared")
    return Measure(
        PER_TOKEN,
        steps,
        f"{what}: per-token acceptance α compared (chain model, accept len = Σ αⁱ, i = 0..k)",
    )
