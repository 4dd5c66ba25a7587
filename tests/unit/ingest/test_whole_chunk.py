"""A chunk with no event goes in bulk as one stretch (``bulk._whole``), and only where the
per-line parser could read a request or an event is searched for one: noise lines, the
front of Prefill lines and the prefixes of Decode lines. What a Decode line's layout
matched, or a Prefill line's tail, may quote any marker and is still that batch; a Decode
line that is no Decode batch (SGLang's ``#window`` lines) fails the layout and the chunk
is cut. Each case: the bulk path equals the per-line records path for every consumer."""

from __future__ import annotations

from datetime import datetime, timedelta

from acceptmon.testing.synth import access_line, decode_line, prefill_line, server_args_line, stamp
from tests.unit.parse.test_fast_path_parity import _consumers

T0 = datetime(2026, 1, 1)


def _log(middle: list[str]) -> bytes:
    """A started server, 200 intervals of Decode/Prefill/access lines, ``middle`` half-way."""
    lines = [server_args_line(T0)]
    for i in range(200):
        ts = T0 + timedelta(seconds=1 + i)
        lines += [decode_line(ts, 2.0 + i % 7 / 10), prefill_line(ts, 900 + i, 3), access_line(ts, 4000 + i)]
        if i == 100:
            lines += middle
    return ("\n".join(lines) + "\n").encode()


def _agree(middle: list[str]) -> int:
    """Batches the bulk path made, the log fed in chunks of 60 lines (the server's start
    line in the first), after checking it agrees with the records path."""
    *bulk, batches = _consumers(_log(middle), bulk=True, chunk_lines=60)
    *lines, _ = _consumers(_log(middle), bulk=False, chunk_lines=60)
    assert bulk == lines
    return batches


def test_markers_quoted_after_a_batch_lines_marker_keep_the_chunk_whole() -> None:
    ts = T0 + timedelta(seconds=101)
    quote = " [repeated 2x across cluster] Receive: obj=x, server_args=y, Finish: obj=z"
    plain = [decode_line(ts, 2.2), prefill_line(ts, 77, 3)]
    assert _agree([line + quote for line in plain]) == _agree(plain)


def test_a_request_marker_in_a_decode_lines_prefix_is_read_as_the_per_line_parser_reads_it() -> None:
    ts = T0 + timedelta(seconds=101)
    glued = f"[{stamp(ts)}] Receive: obj=GenerateReqInput(rid='1') " + decode_line(ts, 2.2)
    unprefixed = decode_line(ts, 2.4).split("] ", 1)[1]
    assert _agree([glued, unprefixed]) > _agree([decode_line(ts, 2.2), decode_line(ts, 2.4)])


def test_a_window_line_among_decode_lines_is_cut_at_and_the_rest_stays_bulk() -> None:
    ts = T0 + timedelta(seconds=101)
    window = (
        f"[{stamp(ts)} TP0] Decode batch, #window: spec accept rate (per-position): [0.80, 0.61, 0.42], "
        "accept len: 2.83 | #lifetime: spec total accept rate (per-position): [0.79, 0.60, 0.41], accept len: 2.80"
    )
    assert _agree([window]) == _agree([decode_line(ts, 2.2)]) + 1
