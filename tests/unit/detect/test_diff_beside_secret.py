"""Issue 19 item 3: a real change beside a secret stays in the diff a finding names.

Only values that are wholly a secret (a rotated API key) drop out; a value that merely holds
a redacted part (a mirror URL with a password, an override holding a token) is compared in its
redacted form, so the drop names it instead of "no config change visible".
"""

from __future__ import annotations

import json
import random
from datetime import datetime, timedelta
from typing import Any

import pytest

from acceptmon.detect.findings import NO_CHANGE, without_secrets
from acceptmon.ingest import Pipeline
from acceptmon.ingest.findings import FindingLog
from acceptmon.model import Chunk, ConfigDiff
from acceptmon.runs import diff, snapshot
from acceptmon.testing import synth
from acceptmon.text.redact import redact_args

TOKEN = "hf_PLANTEDoverrideTok1"


def _override(factor: float, token: str = TOKEN) -> str:
    return json.dumps({"rope_scaling": {"type": "yarn", "factor": factor}, "hf_token": token})


def _diff(before: dict[str, Any], after: dict[str, Any]) -> ConfigDiff | None:
    base = {"tp_size": 2}
    return without_secrets(diff(snapshot({**base, **before}, None), snapshot({**base, **after}, None)))


@pytest.mark.parametrize(
    ("key", "before", "after"),
    [
        ("model_path", "https://user:pw1@mirror/Qwen3-32B", "https://user:pw1@mirror/Qwen3-8B"),
        ("model_path", "https://user:pw1@mirror/Qwen3-32B", "https://user:pw2@mirror/Qwen3-8B"),
        ("json_model_override_args", _override(4.0), _override(1.0)),
        ("json_model_override_args", _override(4.0), _override(1.0, "hf_PLANTEDrotatedTok2")),
    ],
)
def test_a_change_beside_a_secret_is_kept(key: str, before: str, after: str) -> None:
    found = _diff({key: before}, {key: after})
    assert found is not None and [k for k, _, _ in found.changed] == [f"args.{key}"]
    assert "pw1" not in json.dumps(found.changed) and "PLANTED" not in json.dumps(found.changed)


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ({"api_key": "k1"}, {"api_key": "k2"}),  # a rotated key
        ({"api_key": None}, {"api_key": "k2"}),  # a key set
        ({}, {"api_key": "k2"}),  # a key added
        ({"api_key": "k1"}, {}),  # a key removed
        ({"model_path": "https://u:pw1@mirror/Q"}, {"model_path": "https://u:pw2@mirror/Q"}),  # only the pw
        (
            {"json_model_override_args": _override(4.0)},
            {"json_model_override_args": _override(4.0, "hf_X2rot99z")},
        ),
    ],
)
def test_secrets_alone_are_no_change(before: dict[str, Any], after: dict[str, Any]) -> None:
    assert not _diff(before, after)


def test_redacted_forms_are_what_is_compared() -> None:
    old, new = (redact_args({"m": f"https://u:pw@mirror/{m}"})["m"] for m in ("Qwen3-32B", "Qwen3-8B"))
    kept = without_secrets(ConfigDiff(changed=(("args.m", old, new),)))
    assert kept is not None and kept.changed == (("args.m", old, new),)


def _log(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    rng = random.Random(3)
    start = datetime(2026, 12, 1, 9, 0, 0)
    lines = synth.startup(start, 1, **before)
    lines += synth.traffic(rng, start + timedelta(seconds=50), 120, 2.41)
    lines += synth.shutdown(start + timedelta(hours=1))
    second = start + timedelta(hours=1, minutes=5)
    lines += synth.startup(second, 2, **after)
    lines += synth.traffic(rng, second + timedelta(seconds=50), 120, 1.57)
    return lines


@pytest.mark.parametrize(
    ("key", "before", "after"),
    [
        ("model_path", "https://user:pw@mirror/Qwen3-32B", "https://user:pw@mirror/Qwen3-8B"),
        ("json_model_override_args", _override(4.0), _override(1.0)),
    ],
)
def test_the_drop_names_the_change(key: str, before: str, after: str) -> None:
    pipeline = Pipeline()
    log = FindingLog(pipeline)
    pipeline.feed(Chunk("sglang", tuple(_log({key: before}, {key: after})), 1))
    drops = [f for f in log.detector.evaluate() if f.rule == "acceptance_drop_after_change"]
    assert drops, "the scenario must raise a drop"
    assert all(f"args.{key}" in f.changed_keys() and NO_CHANGE not in f.summary for f in drops)
