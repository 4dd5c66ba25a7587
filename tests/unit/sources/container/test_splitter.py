"""ContainerSplitter: the engine's lines from any cut of a container log, positions exact."""

from __future__ import annotations

import itertools
import random
from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from acceptmon.model import CONTAINER_MALFORMED, CONTAINER_OVERLONG
from acceptmon.sources.container.lines import Decoder
from acceptmon.sources.container.splitter import ContainerSplitter
from acceptmon.sources.lines import LineSplitter
from acceptmon.testing import synth
from acceptmon.testing.container import cri, cri_lines, docker, json_file_lines

T0 = datetime(2026, 11, 30, 12, 0, 1, tzinfo=UTC)


def raw(lines: list[str]) -> bytes:
    return ("\n".join(lines) + "\n").encode()


def read(
    data: bytes, cuts: list[int], splitter: ContainerSplitter | None = None
) -> tuple[list[str], list[tuple[int, int]]]:
    """Feed ``data`` cut at ``cuts``: the lines handed out, and after each feed the committed
    offset and how many lines had been handed out by then."""
    sp = splitter or ContainerSplitter()
    out: list[str] = []
    offsets: list[tuple[int, int]] = []
    pos = 0
    bounds = [0, *sorted(c for c in set(cuts) if 0 < c < len(data)), len(data)]
    for a, b in itertools.pairwise(bounds):
        lines, consumed = sp.feed(data[a:b])
        out += lines
        pos += consumed
        offsets.append((pos, len(out)))
    return out, offsets


def test_plain_file_goes_through_line_splitter_unchanged() -> None:
    lines = synth.startup(T0, 1) + list(synth.traffic(random.Random(1), T0, 50, 2.5))
    data = raw(lines)
    sp = ContainerSplitter()
    got, consumed = sp.feed(data)
    assert (got, consumed) == LineSplitter().feed(data)
    assert sp.times is None and sp.lines_read == len(lines) and sp.take_errors() == ()
    more = raw([cri("a CRI-looking line in a plain file")])
    assert sp.feed(more)[0] == [cri("a CRI-looking line in a plain file")]


def test_detection_waits_for_the_first_non_blank_line() -> None:
    sp = ContainerSplitter()
    assert sp.feed(b"\n  \n2026-11-30T12:00:01Z std") == ([], 0)
    assert sp.format is None and sp.pending == len(b"\n  \n2026-11-30T12:00:01Z std")
    lines, consumed = sp.feed(b"out F hello\n")
    assert lines == ["hello"] and sp.format == "cri"
    assert consumed == len(b"\n  \n2026-11-30T12:00:01Z stdout F hello\n")
    assert sp.take_errors() == ((CONTAINER_MALFORMED, 2),)  # the blank lines are not CRI records


def test_split_server_args_any_cut_gives_the_plain_lines_and_times() -> None:
    line = synth.server_args_line(T0, cuda_graph_bs=list(range(1, 3100)))
    plain = [line, *synth.traffic(random.Random(2), T0, 5, 2.5)]
    for wrap in (cri_lines, json_file_lines):
        data = raw(wrap(plain, T0))
        for size in (1, 999, 16 * 1024 + 7, len(data)):
            got, offsets = read(data, list(range(size, len(data), size)))
            assert got == plain and offsets[-1] == (len(data), len(plain))


def test_a_message_in_pieces_is_held_back_and_the_offset_stays_before_it() -> None:
    first = cri("whole")
    pieces = [cri("a ", tag="P"), cri("b", "stderr"), cri("c", tag="F")]
    sp = ContainerSplitter()
    lines, consumed = sp.feed(raw([first, *pieces[:2]]))
    # stderr's "b" is complete but starts after stdout's open piece: held back too.
    assert lines == ["whole"] and consumed == len(first) + 1
    assert sp.times == ["2026-11-30T12:00:01.123456789Z"] and sp.lines_read == 1
    lines, consumed = sp.feed(raw(pieces[2:]))
    assert lines == ["b", "a c"] and consumed == len(raw(pieces))
    assert sp.lines_read == 3


def test_errors_are_counted_once_across_re_decodes() -> None:
    sp = ContainerSplitter()
    sp.feed(raw([cri("ok"), cri("open ", tag="P"), "garbage"]))
    assert sp.take_errors() == ()  # the bad line lies after the boundary: not yet
    sp.feed(raw([cri("more ", tag="P")]))
    assert sp.take_errors() == ()
    lines, _ = sp.feed(raw([cri("end")]))
    assert lines == ["open more end"]
    assert sp.take_errors() == ((CONTAINER_MALFORMED, 1),)
    sp.feed(raw([cri("next")]))
    assert sp.take_errors() == ()


def test_held_bytes_past_the_limit_drop_the_unfinished_message_once() -> None:
    sp = ContainerSplitter(max_line=200)
    data = raw([cri("x" * 60, tag="P"), cri("err", "stderr"), cri("x" * 60, tag="P"), cri("x" * 60, tag="P")])
    lines, consumed = sp.feed(data)
    assert lines == ["err"] and consumed == len(data) and sp.pending == 0
    assert sp.take_errors() == ((CONTAINER_OVERLONG, 1),)
    # The rest of that message is skipped up to its final piece; the next one reads.
    lines, _ = sp.feed(raw([cri("y", tag="P"), cri("tail"), cri("next")]))
    assert lines == ["next"] and sp.take_errors() == ()


def test_an_unterminated_raw_line_past_the_limit_is_skipped_to_its_end() -> None:
    sp = ContainerSplitter(max_line=100)
    sp.feed(raw([cri("a")]))
    lines, consumed = sp.feed(cri("z" * 200).encode())
    assert lines == [] and consumed == 0 and sp.take_errors() == ((CONTAINER_OVERLONG, 1),)
    lines, consumed = sp.feed(b"zzz\n" + raw([cri("b")]))
    assert lines == ["b"] and consumed == len(cri("z" * 200)) + 4 + len(cri("b")) + 1
    assert sp.lines_read == 2


def test_finish_hands_out_an_unfinished_message_as_it_is() -> None:
    sp = ContainerSplitter()
    assert sp.feed(raw([cri("cut ", tag="P")]) + cri("short", tag="P").encode()) == ([], 0)
    assert sp.finish()[0] == ["cut short"]
    assert sp.pending == 0


MESSAGE = st.tuples(
    st.sampled_from(["stdout", "stderr"]),
    st.text(alphabet=st.characters(blacklist_characters="\n\r", codec="utf-8"), max_size=40),
    st.lists(st.integers(min_value=0, max_value=40), max_size=3),
)


def _container_lines(messages: list[tuple[str, str, list[int]]], seed: int, fmt: str, bad: int) -> list[str]:
    """The messages as runtime records, the two streams' pieces interleaved at random."""
    queues: dict[str, list[str]] = {"stdout": [], "stderr": []}
    for stream, text, cuts in messages:
        bounds = [0, *sorted({c for c in cuts if c < len(text)}), len(text)]
        parts = [text[a:b] for a, b in itertools.pairwise(bounds) if b > a] or [""]
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            if fmt == "cri":
                queues[stream].append(cri(part, stream, "F" if last else "P"))
            else:
                queues[stream].append(docker(part, stream, "\n" if last else ""))
    rnd = random.Random(seed)
    out: list[str] = [queues["stdout"].pop(0)] if queues["stdout"] else []
    while queues["stdout"] or queues["stderr"]:
        stream = rnd.choice([s for s in queues if queues[s]])
        out.append(queues[stream].pop(0))
    for _ in range(bad):
        # Blank: a damaged line first after a restart would make the rest read as plain
        # (the format is judged from the first non-blank line; see test_garbage_first...).
        out.insert(rnd.randrange(1, len(out) + 1), rnd.choice(["", "  "]))
    return out


@settings(max_examples=150, deadline=None)
@given(
    st.lists(MESSAGE, min_size=1, max_size=12),
    st.integers(min_value=0, max_value=2**32),
    st.sampled_from(["cri", "json-file"]),
    st.integers(min_value=0, max_value=2),
    st.lists(st.integers(min_value=0, max_value=2000), max_size=10),
)
def test_restart_at_every_committed_offset_neither_loses_nor_repeats(
    messages: list[tuple[str, str, list[int]]], seed: int, fmt: str, bad: int, cuts: list[int]
) -> None:
    lines = _container_lines(messages, seed, fmt, bad)
    expected = Decoder().feed(lines).texts
    data = raw(lines)
    sp = ContainerSplitter()
    got, offsets = read(data, cuts, sp)
    got += sp.finish()[0]
    assert got == expected
    assert sp.errors == {CONTAINER_MALFORMED: bad, CONTAINER_OVERLONG: 0}
    for offset, handed in offsets:
        # What was handed out by this committed offset, then a restart from it (cut otherwise).
        rest = ContainerSplitter()
        tail, _ = read(data[offset:], [c * 3 for c in cuts], rest)
        tail += rest.finish()[0]
        assert got[:handed] + tail == expected, offset


def test_garbage_first_after_a_restart_reads_as_plain() -> None:
    """The format is judged once, from the first non-blank line: documented, not hidden."""
    sp = ContainerSplitter()
    assert sp.feed(raw(["not a runtime record", cri("x")]))[0] == ["not a runtime record", cri("x")]
    assert sp.format == "plain"
