"""llama.cpp lines as people keep them: behind a viewer's prefix, split, indented, headless,
with a pid before the clock, and with a ``mean len`` the counts do not allow (issue 23 §4)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from acceptmon.ingest import Pipeline
from acceptmon.model import Chunk, SpecSample
from acceptmon.parse.line import LineParser

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "llamacpp" / "as-kept.log"


def _specs() -> list[SpecSample]:
    parser = LineParser("s", datetime(2026, 12, 1, 12, 0, tzinfo=UTC))
    lines = SAMPLE.read_text().splitlines()
    records = [parser.parse(t, i) for i, t in enumerate(lines, 1)]
    assert all(r is None or isinstance(r, SpecSample) for r in records)
    return [r for r in records if isinstance(r, SpecSample)]


def test_every_form_is_read_with_its_exact_counts() -> None:
    specs = _specs()
    assert [(s.meta.lineno, s.accepted_tokens, s.drafted_tokens) for s in specs] == [
        (1, 50, 70),  # Docker Desktop's "YYYY-MM-DD HH:MM:SS.mmm | "
        (3, 49, 80),  # the message on the line after its head ("\n" / SLT_CNT)
        (7, 22, 40),  # after the multi-line timing block
        (8, 10, 20),  # indented
        (9, 30, 40),  # no id/task
        (10, 40, 50),  # [pid] before the relative clock
        (11, 30, 50),  # mean len 1.00 with 30 accepted: cannot be
        (13, 5, 20),  # split, each physical line behind the viewer's prefix
        (14, 4, 8),  # mean len below 1
        (15, 6, 12),  # indented before "[pid] " and the relative clock
    ]
    assert all(s.engine_name == "llamacpp" for s in specs)


def test_viewer_and_relative_prefixes_give_times() -> None:
    by_line = {s.meta.lineno: s for s in _specs()}
    assert by_line[1].meta.ts == datetime(2026, 12, 1, 10, 0, 1, 250000, tzinfo=UTC)
    assert by_line[13].meta.ts == datetime(2026, 12, 1, 10, 0, 9, tzinfo=UTC)
    assert by_line[10].meta.ts is not None  # 1.02.345.678 after "[4711] ", placed by the hint
    assert by_line[1].accept_len == 3.5 and by_line[9].accept_len == 3.25


def test_a_mean_len_the_counts_do_not_allow_keeps_the_counts_and_counts_a_warning() -> None:
    by_line = {s.meta.lineno: s for s in _specs()}
    assert [n for n, s in by_line.items() if s.suspect] == [11, 14]
    assert by_line[11].accept_len == 1.0  # printed and possible on its own: kept, flagged
    assert by_line[14].accept_len is None  # below 1: no accept length, counts still exact
    p = Pipeline()
    p.feed(Chunk("s", tuple(SAMPLE.read_text().splitlines()), 1))
    stats = p.store.stats("s")
    assert stats.error_kinds["out_of_range"] == 2
    assert stats.counters["accepted_tokens"] == 50 + 49 + 22 + 10 + 30 + 40 + 30 + 5 + 4 + 6
    assert stats.counters["draft_tokens"] == 70 + 80 + 40 + 20 + 40 + 50 + 50 + 20 + 8 + 12


def test_the_split_old_line_after_a_start_keeps_every_count() -> None:
    import re

    path = SAMPLE.parent / "old-rate-restart.log"
    parser = LineParser("s", datetime(2026, 12, 1, 12, 0, tzinfo=UTC))
    lines = path.read_text().splitlines()
    specs = [r for i, t in enumerate(lines, 1) if isinstance(r := parser.parse(t, i), SpecSample)]
    printed = re.findall(r"\( *(\d+) accepted / *(\d+) generated\)", path.read_text())
    assert len(specs) == 80 and [(s.accepted_tokens, s.drafted_tokens) for s in specs] == [
        (int(a), int(g)) for a, g in printed
    ]
    assert all(s.accept_len is None and not s.suspect for s in specs)
