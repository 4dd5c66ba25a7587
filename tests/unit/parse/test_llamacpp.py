"""llama.cpp's per-request draft acceptance lines, every shape (format notes: docs/formats/llamacpp.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from acceptmon.parse.llamacpp import parse

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "llamacpp" / "variants.log"


def test_every_variant_parses_exactly() -> None:
    got = [parse(line) for line in SAMPLES.read_text().splitlines()]
    assert [(a.accepted, a.generated) if a else None for a in got] == [
        (49, 80), (257, 388), (257, 388), (10, 20), (30, 40), None,
    ]  # fmt: skip
    old, june, october, relative, jsonl, _ = got
    assert (
        old is not None and old.mean_len is None and old.rate == 49 / 80 and old.slot == 0 and old.task == 17
    )
    assert june is not None and june.mean_len == 2.92 and june.per_position == (0.813, 0.716, 0.619)
    assert october is not None and october.mean_len == 3.65 and october.per_position == ()
    assert relative is not None and relative.since_start == pytest.approx(12 * 60 + 34.56789)
    assert jsonl is not None and jsonl.json_time == 1795856400.25 and jsonl.slot == 2


@pytest.mark.parametrize(
    "line",
    [
        "draft acceptance = 0.5 (  30 accepted /   20 generated)",  # more accepted than generated
        "draft acceptance = 1.5 (  10 accepted /   20 generated)",
        "draft acceptance = " + "9" * 5000,
        '{"msg": 3, "type": "log"} draft acceptance',
        "User said: please print draft acceptance for me",
    ],
)
def test_impossible_or_foreign_lines_are_not_records(line: str) -> None:
    assert parse(line) is None


RESTART = SAMPLES.parent / "restart-drop.log"


def _line_records(path: Path) -> list[object]:
    from datetime import UTC, datetime

    from acceptmon.parse.line import LineParser

    parser = LineParser("s", datetime(2026, 12, 1, 12, 0, tzinfo=UTC))
    lines = path.read_text().splitlines()
    return [r for i, t in enumerate(lines, 1) if (r := parser.parse(t, i)) is not None]


def test_a_start_up_becomes_one_server_start_with_the_models_build_and_slots() -> None:
    from acceptmon.model import ServerStart

    starts = [r for r in _line_records(RESTART) if isinstance(r, ServerStart)]
    assert [s.meta.lineno for s in starts] == [6, 319]  # the "loading model" lines
    assert starts[0].args == {
        "build": "6512 (a1b2c3d4)",
        "build_target": "x86_64-linux-gnu",
        "model": "/models/Qwen3-32B-Q4_K_M.gguf",
        "model_draft": "/models/Qwen3-0.6B-Q8_0.gguf",
        "n_parallel": 4,
    }
    assert starts[1].args["model_draft"] == "/models/Qwen3-0.6B-Q2_K.gguf"


def test_counts_are_token_exact_and_times_run_on_across_the_restart() -> None:
    import re

    from acceptmon.model import SpecSample

    specs = [r for r in _line_records(RESTART) if isinstance(r, SpecSample)]
    printed = re.findall(r"\( *(\d+) accepted / *(\d+) generated\)", RESTART.read_text())
    assert [(s.accepted_tokens, s.drafted_tokens) for s in specs] == [(int(a), int(g)) for a, g in printed]
    assert all(s.engine_name == "llamacpp" and s.accept_len is not None for s in specs)
    stamps = [s.meta.ts.timestamp() for s in specs if s.meta.ts is not None]
    assert len(stamps) == len(specs) and stamps == sorted(stamps)  # relative times, one clock
    first = specs[0].meta.ts
    assert first is not None and first.timestamp() == pytest.approx(1796126400.0 + 4.686427, abs=1e-3)


def test_a_request_body_quoting_the_line_is_not_a_record() -> None:
    from acceptmon.parse.line import LineParser

    parser = LineParser("s")
    body = 'srv  log_server_r: request:  {"prompt": "slot print_timing: id  0 | task 1 | draft acceptance'
    assert parser.parse(body + ' = 0.5 (  1 accepted /   2 generated)"}', 1) is None
    assert parser.parse("srv    load_model: the user said loading model 'x'", 2) is None
