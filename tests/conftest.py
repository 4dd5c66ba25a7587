"""Shared test fixtures: where the format-exact samples live."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("ACCEPTMON_SHARED", ROOT.parent / "shared"))
#: The shared samples when they sit beside the checkout (CI, developers), else the
#: copy vendored with the tests, so a bare clone still runs the whole suite.
_BESIDE = SHARED / "samples" / "sglang"
SAMPLES = _BESIDE if (_BESIDE / "manifest.json").exists() else ROOT / "tests" / "data" / "sglang-samples"


@pytest.fixture(scope="session")
def samples_dir() -> Path:
    if not (SAMPLES / "manifest.json").exists():
        pytest.fail(f"format samples not found at {SAMPLES} (set ACCEPTMON_SHARED)")
    return SAMPLES
