"""The detector's golden logs are exactly what ``detect_cases`` writes (so a case can be read there)."""

from __future__ import annotations

import pytest

from tests.golden.detect_cases import CASES, HERE, text


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_stored_log_is_the_generated_one(case: str) -> None:
    assert (HERE / case / "input.log").read_text() == text(case)
    assert (HERE / case / "expected.findings.jsonl").exists()
