"""Shared test fixtures: where the format-exact samples live."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("ACCEPTMON_SHARED", ROOT.parent / "shared"))
SAMPLES = SHARED / "samples" / "sglang"


@pytest.fixture(scope="session")
def samples_dir() -> Path:
    if not (SAMPLES / "manifest.json").exists():
        pytest.fail(f"format samples not found at {SAMPLES} (set ACCEPTMON_SHARED)")
    return SAMPLES
