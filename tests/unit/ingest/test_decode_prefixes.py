"""Each Decode line's prefix is the line up to its last marker, whatever the widths.

``runs.batch.decode_prefixes`` cuts every prefix with one slice where the markers stand at one offset
(a log's usual fixed-width time and rank tag); lines of other widths, and lines quoting the
marker twice, must still be cut at their own last marker.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from acceptmon.parse.sglang import DECODE
from acceptmon.runs.batch import decode_prefixes

_LINE = st.builds(
    lambda head, quoted, tail: head + (DECODE + "x" if quoted else "") + DECODE + tail,
    st.text("[]0123456789 :-TP", max_size=30),
    st.booleans(),
    st.text("#,: 0123456789.", max_size=20),
)


@given(st.lists(_LINE, max_size=20))
def test_prefixes_end_at_each_lines_last_marker(lines: list[str]) -> None:
    assert decode_prefixes(lines) == [line[: line.rfind(DECODE)] for line in lines]


@given(st.text("0123456789", min_size=1, max_size=5), st.integers(1, 20))
def test_one_width_is_cut_alike(stamp: str, n: int) -> None:
    lines = [f"[{stamp}]{DECODE}, #running-req: {i}" for i in range(n)]
    assert decode_prefixes(lines) == [f"[{stamp}]"] * n
