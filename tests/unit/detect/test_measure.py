"""Per-token acceptance under the chain model, and when a comparison uses it."""

from __future__ import annotations

import pytest

from acceptmon.detect.measure import (
    ACCEPT_LEN,
    ALPHA_SCALE,
    PER_TOKEN,
    chain_len,
    choose,
    per_token,
    to_per_token,
)
from acceptmon.model import SpecConfig


def chain(k: int, topk: int = 1) -> SpecConfig:
    return SpecConfig(algorithm="EAGLE3", num_steps=k, eagle_topk=topk, num_draft_tokens=k + 1)


@pytest.mark.parametrize("k", [1, 2, 3, 5, 7])
@pytest.mark.parametrize("alpha", [0.05, 0.4, 0.7, 0.93])
def test_per_token_inverts_the_chain_length(alpha: float, k: int) -> None:
    centi = round(chain_len(alpha, k) * 100)
    assert per_token(centi, k) / ALPHA_SCALE == pytest.approx(alpha, abs=0.01)


def test_per_token_is_clamped_to_what_a_chain_can_show() -> None:
    assert per_token(100, 3) == 0 and per_token(90, 3) == 0
    assert per_token(400, 3) == per_token(460, 3) == ALPHA_SCALE
    assert per_token(250, 0) == 0


def test_five_steps_to_three_lowers_accept_len_but_not_per_token_acceptance() -> None:
    before, after = chain_len(0.7, 5), chain_len(0.7, 3)
    assert 0.12 < 1 - after / before < 0.16  # the "~15%" of the issue
    assert per_token(round(before * 100), 5) == pytest.approx(per_token(round(after * 100), 3), abs=30)


def test_to_per_token_keeps_counts_and_buckets() -> None:
    strata = {0: {250: 3, 251: 1}, 2: {300: 2}}
    got = to_per_token(strata, 3)
    assert {b: sum(h.values()) for b, h in got.items()} == {0: 4, 2: 2}
    assert max(got[0]) < min(got[2])  # monotone: a longer accept len is a higher α


def test_the_same_draft_shape_compares_accept_len() -> None:
    m = choose(chain(3), chain(3))
    assert (m.name, m.note, m.per_token) == (ACCEPT_LEN, "", False)


def test_a_draft_length_change_compares_per_token_acceptance_and_says_so() -> None:
    m = choose(chain(5), chain(3))
    assert m.name == PER_TOKEN and m.per_token and m.steps == (5, 3)
    assert "steps 5 → 3" in m.note and "per-token acceptance" in m.note


def test_a_tree_draft_makes_the_two_incomparable() -> None:
    m = choose(chain(3), chain(3, topk=4))
    assert m.name == ACCEPT_LEN
    assert "tree draft (topk 4)" in m.note and "not comparable" in m.note


def test_an_unknown_draft_length_falls_back_to_accept_len() -> None:
    m = choose(SpecConfig(algorithm="EAGLE3"), chain(3))
    assert m.name == ACCEPT_LEN and "unknown" in m.note
