"""The one accept-rate formula: every stage that turns an accept length into a rate uses it."""

from __future__ import annotations


def accept_rate(accept_len: float, slots: int | None) -> float | None:
    """Fraction of draft tokens accepted, bonus token excluded (0–1, four decimals).

    SGLang 0.5.11+'s definition, ``(accept_len − 1) / (draft_tokens − 1)``, which
    for chains equals vLLM's accepted/drafted; ``slots`` is the run's draft
    positions (``SpecConfig.slots``). None without them, or for a length ≤ 0:
    then the printed value cannot be interpreted.
    """
    if not slots or accept_len <= 0:
        return None
    return round(min(1.0, max(0.0, (accept_len - 1.0) / slots)), 4)
