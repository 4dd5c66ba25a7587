"""Container log formats: detection, joining of split pieces, bounds, times."""

from __future__ import annotations

import itertools
import json
import random
from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from acceptmon.sources.container.lines import CRI, JSON_FILE, PLAIN, Decoder, Message, detect, parse_time
from acceptmon.testing import synth
from acceptmon.testing.container import PIECE, cri, docker, split

T0 = datetime(2026, 11, 30, 12, 0, 1, tzinfo=UTC)


def long_server_args() -> str:
    """An ~18 KB SGLang 0.5.23-like ``server_args`` line (its CUDA graph batch sizes dominate)."""
    line = synth.server_args_line(T0, cuda_graph_bs=list(range(1, 3100)), chat_template="qwen3")
    assert 17_000 < len(line.encode()) < 20_000
    return line


def cri_pieces(text: str, cuts: list[int], stream: str = "stdout") -> list[str]:
    bounds = [0, *sorted(set(cuts)), len(text)]
    parts = [text[a:b] for a, b in itertools.pairwise(bounds) if b > a] or [""]
    return [cri(p, stream, "P") for p in parts[:-1]] + [cri(parts[-1], stream, "F")]


def docker_pieces(text: str, stream: str = "stdout") -> list[str]:
    chunks = split(text)
    return [docker(c, stream, "") for c in chunks[:-1]] + [docker(chunks[-1], stream)]


def decode(lines: list[str], decoder: Decoder | None = None) -> list[Message]:
    return list((decoder or Decoder()).feed(lines).messages())


def test_each_format_is_detected() -> None:
    assert detect(cri("hello")) == CRI
    assert detect(docker("hello")) == JSON_FILE
    assert detect(synth.decode_line(T0, 2.5)) == PLAIN
    assert detect('{"msg": "a json log that is not docker"}') == PLAIN
    assert detect("2026-11-30 stdout F no T in the time") == PLAIN
    d = Decoder()
    d.feed(["", "  "])
    assert d.format is None
    d.feed(["", docker("x")])
    assert d.format == JSON_FILE


def test_plain_sglang_log_passes_through_as_the_same_list() -> None:
    lines = synth.startup(T0, 1) + list(synth.traffic(random.Random(1), T0, 50, 2.5))
    d = Decoder()
    out = d.feed(lines)
    assert out.texts is lines and out.streams is None and out.times is None
    more = [cri("looks like CRI but the file is plain")]
    assert d.feed(more).texts is more
    assert d.errors == {"malformed": 0, "overlong": 0}


def test_server_args_split_into_cri_pieces_decodes_byte_identical() -> None:
    line = long_server_args()
    pieces = cri_pieces(line, list(range(PIECE, len(line), PIECE)))
    assert len(pieces) == 2
    d = Decoder()
    got = decode([cri("before"), *pieces, cri("after")], d)
    assert [m.text for m in got] == ["before", line, "after"]
    assert got[1].text.encode() == line.encode()
    assert d.errors == {"malformed": 0, "overlong": 0} and d.pending_pieces == 0


def test_server_args_split_into_json_file_pieces_decodes_byte_identical() -> None:
    line = long_server_args()
    pieces = docker_pieces(line)
    assert len(pieces) == 2 and not json.loads(pieces[0])["log"].endswith("\n")
    d = Decoder()
    got = decode([docker("before"), *pieces, docker("after", "stderr")], d)
    assert [m.text for m in got] == ["before", line, "after"]
    assert [m.stream for m in got] == ["stdout", "stdout", "stderr"]
    assert d.errors == {"malformed": 0, "overlong": 0}


def test_interleaved_stdout_and_stderr_partials_join_per_stream() -> None:
    lines = [
        cri("out-1 ", "stdout", "P"),
        cri("err-1 ", "stderr", "P"),
        cri("err-2 ", "stderr", "P"),
        cri("out-2", "stdout", "F"),
        cri("err-3", "stderr", "F"),
    ]
    assert [(m.text, m.stream) for m in decode(lines)] == [
        ("out-1 out-2", "stdout"),
        ("err-1 err-2 err-3", "stderr"),
    ]
    records = [
        docker("out-1 ", "stdout", ""),
        docker("err-1 ", "stderr", ""),
        docker("out-2", "stdout"),
        docker("err-2", "stderr"),
    ]
    assert [(m.text, m.stream) for m in decode(records)] == [
        ("out-1 out-2", "stdout"),
        ("err-1 err-2", "stderr"),
    ]


def test_partial_at_end_stays_pending_until_more_lines_or_flush() -> None:
    d = Decoder()
    assert decode([cri("first ", tag="P"), cri("second ", "stderr", "P")], d) == []
    assert d.pending_pieces == 2 and d.pending_bytes == len("first second ")
    assert [m.text for m in decode([cri("end")], d)] == ["first end"]
    flushed = list(d.flush().messages())
    assert [(m.text, m.stream) for m in flushed] == [("second ", "stderr")]
    assert d.pending_pieces == 0 and d.pending_bytes == 0


def test_overlong_message_is_dropped_counted_and_never_held() -> None:
    d = Decoder(max_message=100)
    lines = [cri("x" * 60, tag="P"), cri("x" * 60, tag="P")]
    assert decode(lines, d) == []
    assert d.errors["overlong"] == 1 and d.pending_bytes == 0
    # The rest of that message is skipped up to its final piece; the next one reads.
    assert [m.text for m in decode([cri("y" * 60, tag="P"), cri("tail"), cri("next")], d)] == ["next"]
    assert d.errors["overlong"] == 1
    assert decode([cri("z" * 101)], d) == []
    assert d.errors["overlong"] == 2
    j = Decoder(max_message=100)
    assert (
        decode([docker("x" * 60, end=""), docker("x" * 60, end=""), docker("x"), docker("ok")], j)[0].text
        == "ok"
    )
    assert j.errors["overlong"] == 1


def test_malformed_container_lines_are_counted_and_skipped() -> None:
    d = Decoder()
    bad = [
        "not a cri line",
        "2026-11-30T12:00:01Z stdin F wrong stream",
        "2026-11-30T99:00:01Z stdout F bad time",
        "2026-11-30T12:00:01 stdout F no zone",
        "2026-11-30T12:00:01Z stdout F",
        "",
    ]
    assert [m.text for m in decode([cri("ok"), *bad, cri("ok too")], d)] == ["ok", "ok too"]
    assert d.errors["malformed"] == len(bad)
    j = Decoder()
    bad_json = ["{not json", '{"log": 3, "stream": "stdout"}', '{"log": "x\\n", "stream": "in"}', "[1]"]
    assert [m.text for m in decode([docker("ok"), *bad_json], j)] == ["ok"]
    assert j.errors["malformed"] == len(bad_json)


def test_runtime_times_are_kept_raw_and_parse_with_their_zone() -> None:
    (m,) = decode([cri("x", when="2026-11-30T12:00:01.123456789+02:00")])
    assert m.time == "2026-11-30T12:00:01.123456789+02:00"
    assert parse_time(m.time) == datetime(2026, 11, 30, 12, 0, 1, 123456, tzinfo=timezone(timedelta(hours=2)))
    (m,) = decode([cri("x", when="2026-11-30T12:00:01Z")])
    assert m.time is not None and parse_time(m.time) == datetime(2026, 11, 30, 12, 0, 1, tzinfo=UTC)
    (m,) = decode([docker("x")])
    assert m.time is not None and parse_time(m.time) == datetime(2026, 11, 30, 12, 0, 1, 123456, tzinfo=UTC)
    (m,) = decode(['{"log":"no time\\n","stream":"stderr"}'])
    assert m == Message("no time", "stderr", None)


def test_json_file_escapes_attrs_and_omitted_empty_log_are_read() -> None:
    lines = [
        r'{"log":"a \u003cb\u003e \u0026 \"q\" \u2028 \\ \t\r\n","stream":"stderr","attrs":{"tag":"x"},"time":"2026-11-30T12:00:01Z"}',
        '{"stream":"stdout","time":"2026-11-30T12:00:01Z"}',
        docker("end"),
    ]
    d = Decoder()
    assert [m.text for m in decode(lines, d)] == ['a <b> & "q" \u2028 \\ \t', "end"]
    assert d.errors == {"malformed": 0, "overlong": 0}


def test_first_piece_time_is_the_message_time() -> None:
    lines = [cri("a", tag="P", when="2026-11-30T12:00:01Z"), cri("b", when="2026-11-30T12:00:02Z")]
    (m,) = decode(lines)
    assert m.time == "2026-11-30T12:00:01Z"


def test_cri_tags_after_the_first_are_ignored_and_spaces_kept() -> None:
    (m,) = decode([cri(" lead  and trail ", tag="F:extra")])
    assert m.text == " lead  and trail "


@given(st.text(max_size=300), st.lists(st.integers(min_value=0, max_value=300), max_size=12))
def test_any_split_into_cri_pieces_round_trips(text: str, cuts: list[int]) -> None:
    text = text.replace("\n", " ").replace("\r", " ")
    pieces = cri_pieces(text, [c for c in cuts if c < len(text)])
    d = Decoder()
    assert [m.text for m in decode(pieces, d)] == [text]
    assert d.pending_pieces == 0 and d.errors["malformed"] == 0
