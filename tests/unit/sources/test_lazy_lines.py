"""Lines split only when read are the lines they stand for, however they are read.

Where a scout sorted a chunk, the reading holds its lines as ``Lines`` (the decoded text,
split when a line far from either end is read; cut out where a scout said where each line
starts) and picks its Decode lines as ``bulk.Picked`` (the first and last found by their flags,
any other where the lines are placed). Every read of them (an index from either end, a
slice of a slice, iteration, equality) must give what the split lines give, and a splitter
with ``lazy`` must give the lines it gives without.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from functools import partial

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acceptmon.ingest import bulk, scout
from acceptmon.sources.lines import _NEAR, Lines, LineSplitter

#: Lines of a few shapes: empty, short, holding the markers the bulk path looks for.
_LINE = st.sampled_from(["", "a", "[t] Decode batch, x", "[t] Prefill batch, y", "noise 12"]) | st.text(
    alphabet="ab \t[]é", max_size=6
)
_INDEX = st.integers(-80, 80)
_SLICE = st.builds(slice, st.none() | _INDEX, st.none() | _INDEX, st.none() | st.sampled_from([1, 2, -1, 3]))


def _lazy(lines: list[str]) -> Lines:
    text = "\n".join(lines)
    return Lines(text, text.count("\n") + 1)


def _same(got: Sequence[str], want: Sequence[str], index: int, cut: slice, inner: slice) -> None:
    assert len(got) == len(want)
    if -len(want) <= index < len(want):
        assert got[index] == want[index]
    else:
        with pytest.raises(IndexError):
            got[index]
    part, whole = got[cut], tuple(want[cut])
    assert tuple(part) == whole and len(part) == len(whole)
    assert tuple(part[inner]) == whole[inner]
    if whole:
        assert part[0] == whole[0] and part[-1] == whole[-1]
        assert [part[i] for i in range(len(whole))] == list(whole)
    assert list(got) == list(want)


@settings(max_examples=300, deadline=None)
@given(st.lists(_LINE, min_size=1, max_size=2 * _NEAR + 20), _INDEX, _SLICE, _SLICE)
def test_lines_read_as_their_split_text(lines: list[str], index: int, cut: slice, inner: slice) -> None:
    _same(_lazy(lines), tuple(lines), index, cut, inner)
    # Read again once split (a line far from the ends splits them): the same answers.
    split = _lazy(lines)
    split.split()
    _same(split, tuple(lines), index, cut, inner)
    assert _lazy(lines) == tuple(lines) and hash(_lazy(lines)) == hash(tuple(lines))
    # Placed where a scout says each line starts (backfill): any one line is cut out.
    placed = _lazy(lines)
    starts = array("q")
    starts.frombytes(scout._starts(lines))
    placed.place(starts)
    assert placed.placed
    assert [placed[i] for i in range(-len(lines), len(lines))] == lines + lines
    assert placed._got is None  # each line was cut out, none split
    _same(placed, tuple(lines), index, cut, inner)


def test_the_ends_are_read_without_splitting() -> None:
    lines = [f"line {i}" for i in range(10 * _NEAR)]
    got = _lazy(lines)
    assert [got[i] for i in range(_NEAR)] == lines[:_NEAR]
    assert [got[-1 - i] for i in range(_NEAR)] == lines[::-1][:_NEAR]
    assert len(got[5:-5]) == len(lines) - 10 and got[5:-5][0] == "line 5"
    assert got._got is None
    assert got[5 * _NEAR] == lines[5 * _NEAR] and got._got is not None
    placed = _lazy(lines)
    placed.place(array("q", [0, 1]))  # not one start per line: not taken
    assert not placed.placed


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["d", "p", "n"]), min_size=1, max_size=40), _INDEX, _SLICE, _SLICE)
def test_decode_lines_picked_by_flags_read_as_picked(
    kinds: list[str], index: int, cut: slice, inner: slice
) -> None:
    lines = [f"{kind}{i}" for i, kind in enumerate(kinds)]
    flags = bytes(kind == "d" for kind in kinds)
    n = flags.count(1)
    want = tuple(line for line in lines if line[0] == "d")
    placed = _lazy(lines)
    starts = array("q")
    starts.frombytes(scout._starts(lines))
    placed.place(starts)
    for held in (lines, _lazy(lines), placed):
        picked = bulk.Picked(partial(bulk._decoded, held, flags), n, bulk._DecodedAt(held, flags, n))
        if n:
            assert picked[0] == want[0] and picked[-1] == want[-1]
            assert picked._got is None  # the ends came from the flags
        if held is placed:
            assert [picked[i] for i in range(n)] == list(want)
            assert picked._got is None and placed._got is None  # any one, by the flags and starts
        _same(picked, want, index, cut, inner)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from(["abc\n", "d\r\n", "\n", "é\n", "x" * 9 + "\n", "yz", "\xff\n"]), max_size=30),
    st.integers(1, 12),
)
def test_a_lazy_splitter_gives_the_lines_it_gives_without(pieces: list[str], size: int) -> None:
    data = "".join(pieces).encode("latin-1")
    plain, lazy = LineSplitter(max_line=8), LineSplitter(max_line=8, lazy=True)
    for at in range(0, len(data), size):
        got, want = lazy.feed(data[at : at + size]), plain.feed(data[at : at + size])
        assert (list(got[0]), got[1]) == (list(want[0]), want[1])
        assert lazy.text == plain.text and lazy.overlong == plain.overlong
