"""A chunk's Prefill lines a scout flagged are counted without being picked out.

``bulk.Picked`` answers their number from the flags; the lines are picked (once) only when
something reads them: a Prefill check the scout could not answer, or jsonl's records.
"""

from __future__ import annotations

from acceptmon.ingest import bulk

LINES = ["d1", "p1", "n1", "d2", "p2"]
DECODE = bytes([1, 0, 0, 1, 0])
PREFILL = bytes([1, 0, 1])  # among the lines without a Decode flag: p1, n1, p2


def test_counted_without_picking_and_picked_once() -> None:
    calls: list[int] = []

    def pick() -> list[str]:
        calls.append(1)
        return bulk._picked(LINES, DECODE, PREFILL)

    picked = bulk.Picked(pick, PREFILL.count(1))
    assert len(picked) == 2 and bool(picked)
    assert calls == []
    assert list(picked) == ["p1", "p2"] and picked[1] == "p2" and "\n".join(picked) == "p1\np2"
    assert calls == [1]


def test_a_scouts_sorting_picks_what_sort_lines_picks() -> None:
    lines = ["[t] Decode batch, x", "[t] Prefill batch, y", "noise", "[t] Decode batch, z"]
    sorted_here = bulk.sort_lines(lines, "\n".join(lines))
    assert sorted_here is not None
    flags = (bytes(sorted_here.decode), bytes(sorted_here.prefill_marks), "\n".join(sorted_here.prefixes))
    scouted = bulk.Sorted.of(lines, flags, None, None)
    assert len(scouted.prefill) == len(sorted_here.prefill) == 1
    assert list(scouted.prefill) == list(sorted_here.prefill)
    assert scouted.prefixes == "\n".join(sorted_here.prefixes)
