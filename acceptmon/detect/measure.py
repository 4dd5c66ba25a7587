"""Which measure a run is compared in: accept len, or per-token acceptance when the draft's length changed.

With a chain draft of k steps, accept len = Σ_{i=0..k} αⁱ for a per-token
acceptance α: going from 5 steps to 3 lowers accept len ~15% with the same
draft model, and a worse draft can hide behind a longer one (accept len flat,
α down). So when the draft's shape (steps, draft tokens, topk) differs between
the baseline run and the current one, both sides are turned into α under the
chain model and α is compared. A tree draft (topk > 1) has no such model: then
accept len is compared and the finding says the two were not comparable.

Under adaptive speculation (SGLang's ``--speculative-adaptive``) the server moves the
steps itself as acceptance moves, so such a run keeps its windows in α from the start
(``alpha``: a side already in α is not converted again).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from acceptmon.detect.compare import Comparison, Level
from acceptmon.detect.series import Strata
from acceptmon.model import ConfigDiff, Run, SpecConfig

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
    #: Whether each side's histograms already hold α (an adaptive run's do).
    alpha: tuple[bool, bool] = (False, False)

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


def adaptive(run: Run) -> bool:
    """Whether the server moves this run's draft steps itself: a chain draft of known length
    started with ``speculative_adaptive``, or already seen changing its steps."""
    chain = (run.spec.eagle_topk or 1) == 1 and run.spec.num_steps is not None and run.spec.num_steps > 0
    args = run.config.server_args if run.config is not None else {}
    return chain and (run.kind == "spec_params" or args.get("speculative_adaptive") is True)


def chain_comparison(cmp: Comparison, k_before: int | None, k_after: int | None) -> Comparison:
    """A comparison of α as accept len at each side's chain length (for a finding's accept-len fields)."""

    def level(lv: Level, k: int | None) -> Level:
        if k is None:
            return lv
        return Level(chain_len(lv.value, k), chain_len(lv.low, k), chain_len(lv.high, k))

    return Comparison(
        level(cmp.before, k_before),
        level(cmp.after, k_after),
        cmp.p_value,
        cmp.before_n,
        cmp.after_n,
        cmp.strata,
    )


ADAPTIVE_NOTE = (
    "adaptive speculation moves the draft steps with acceptance, so per-token acceptance α is compared "
    "(chain model, accept len = Σ αⁱ, i = 0..k)"
)


def choose(before: SpecConfig, after: SpecConfig, alpha: tuple[bool, bool] = (False, False)) -> Measure:
    """Accept len unless the draft's shape changed; then α if both sides are chains of known length.
    A side whose histograms hold α (``alpha``) makes it α, or nothing comparable."""
    if any(alpha):
        steps = (before.draft_slots(), after.draft_slots())
        ok = all(
            a or ((s.eagle_topk or 1) == 1 and k is not None)
            for a, s, k in zip(alpha, (before, after), steps, strict=True)
        )
        if not ok:
            return Measure(
                ACCEPT_LEN, steps, "adaptive speculation beside a tree draft: not comparable", alpha
            )
        return Measure(PER_TOKEN, steps, ADAPTIVE_NOTE, alpha)
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


#: Diff keys a tree draft's size is made of: with only these changed, the draft itself is the same.
TREE_SIZE_KEYS = frozenset({"speculative_num_draft_tokens", "speculative_num_steps"})


def _tree_size(key: str) -> bool:
    """Whether a diff key is one of the server args a tree's size is made of."""
    where, _, name = key.partition(".")
    return where in ("args", "server_args") and name in TREE_SIZE_KEYS


def tree_explains(before: SpecConfig, after: SpecConfig, diff: ConfigDiff | None, drop: float) -> str:
    """Why a fall of ``drop`` is the change itself, or "": a tree draft (topk > 1) that verifies
    fewer draft tokens with the same draft accepts fewer, and a tree has no chain model to
    correct for it. Each verified token adds at most its share, so a fall up to 1 − after/before
    (−25% for 8 → 6) is what the smaller tree explains; a larger one, or any other change beside
    it (a new draft), is not explained."""
    n_before, n_after = before.num_draft_tokens, after.num_draft_tokens
    if (before.eagle_topk or 1) <= 1 or (after.eagle_topk or 1) <= 1 or n_before is None or n_after is None:
        return ""
    changed = diff.keys() if diff is not None else []
    if not changed or n_after >= n_before or not all(_tree_size(k) for k in changed):
        return ""
    bound = 1 - n_after / n_before
    if drop > bound:
        return ""
    return (
        f"the tree draft verifies fewer tokens with the same draft ({n_before} → {n_after}), which "
        f"explains a fall of up to {bound:.0%}: expected from the change, not a worse draft"
    )
