from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from acceptmon.sources.lines import LineSplitter


def test_partial_line_is_held_and_offsets_stay_on_line_boundaries() -> None:
    s = LineSplitter()
    assert s.feed(b"a\nb") == (["a"], 2)
    assert s.pending == 1
    assert s.feed(b"c") == ([], 0)
    assert s.feed(b"d\r\ne\n") == (["bcd", "e"], 7)
    assert s.pending == 0


def test_invalid_utf8_is_replaced() -> None:
    assert LineSplitter().feed(b"\xff ok\n") == (["\ufffd ok"], 5)


def test_overlong_lines_are_dropped_and_counted_memory_stays_bounded() -> None:
    s = LineSplitter(max_line=5)
    assert s.feed(b"ok\n" + b"x" * 4) == (["ok"], 3)
    assert s.feed(b"x" * 100) == ([], 0)  # now known to be too long: skipped, not held
    assert len(s._tail) == 0
    assert s.feed(b"xx\nfine\n") == (["fine"], 112)
    assert s.overlong == 1
    assert s.feed(b"123456\n") == ([], 7)
    assert s.overlong == 2


@given(st.lists(st.binary(max_size=30), max_size=20), st.data())
def test_any_split_of_the_stream_gives_the_same_lines(parts: list[bytes], data: st.DataObject) -> None:
    stream = b"".join(parts).replace(b"\r", b"")
    whole = LineSplitter()
    expected, consumed = whole.feed(stream)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=6)))
    pieces = [stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True)]
    s = LineSplitter()
    got: list[str] = []
    total = 0
    for piece in pieces:
        lines, n = s.feed(piece)
        got += lines
        total += n
    assert got == expected and total == consumed == stream.rfind(b"\n") + 1
