"""Request dumps (``--log-requests``) in a chunk that otherwise goes whole (``bulk._plain_dumps``):
a dump continues over the lines that start no log entry, and the per-line parser reads no
marker there. A chunk keeps its bulk path when no dump can hide a batch or an event: one-line
dumps, or dumps continued by noise while every batch line starts an entry. Each case: the bulk
path equals the per-line records path for every consumer (``_agree``)."""

from __future__ import annotations

from datetime import datetime, timedelta

from acceptmon.testing.synth import decode_line, prefill_line, stamp
from tests.unit.ingest.test_whole_chunk import _agree

T0 = datetime(2026, 1, 1)
TS = T0 + timedelta(seconds=101)
DUMP = f"[{stamp(TS)}] Receive: obj=GenerateReqInput(rid='7', text='hi')"
#: Uvicorn's access line without SGLang's prefix: no log entry, so it continues a dump.
BARE_ACCESS = 'INFO:     127.0.0.1:4000 - "POST /generate HTTP/1.1" 200 OK'


def _plain() -> int:
    return _agree([decode_line(TS, 2.2), prefill_line(TS, 77, 3)])


def test_one_line_dumps_keep_the_chunk_whole() -> None:
    assert _agree([DUMP, decode_line(TS, 2.2), DUMP, prefill_line(TS, 77, 3), DUMP]) == _plain()


def test_dumps_continued_by_noise_keep_the_chunk_whole() -> None:
    lines = [DUMP, BARE_ACCESS, "  text='more of the prompt'", decode_line(TS, 2.2)]
    assert _agree([*lines, DUMP, BARE_ACCESS, prefill_line(TS, 77, 3)]) == _plain()


def test_a_batch_line_continuing_a_dump_is_part_of_the_dump() -> None:
    # Indented: it starts no log entry, yet the bulk layout (from ``] Decode batch``) matches it.
    quoted = "    " + decode_line(TS, 2.4)
    assert _agree([DUMP, BARE_ACCESS, quoted, decode_line(TS, 2.2)]) > _agree([decode_line(TS, 2.2)])
    _agree([DUMP, "    " + prefill_line(TS, 77, 3), decode_line(TS, 2.2)])


def test_an_event_marker_continuing_a_dump_is_read_as_the_per_line_parser_reads_it() -> None:
    _agree([DUMP, "  'stop': 'SIGTERM received'", BARE_ACCESS, decode_line(TS, 2.2)])


def test_a_request_marker_in_front_of_a_prefill_marker_is_read_as_the_per_line_parser_reads_it() -> None:
    _agree([f"[{stamp(TS)}] Finish: obj=x " + prefill_line(TS, 77, 3), decode_line(TS, 2.2)])


def test_a_dump_at_every_chunk_end_is_read_as_the_per_line_parser_reads_it() -> None:
    for k in range(1, 61):  # chunks hold 60 lines: one of these ends a chunk with the dump
        # The next chunk goes on with the dump: the stop quoted there is no event.
        _agree([decode_line(TS, 2.2)] * k + [DUMP, "SIGTERM received, shutting down", BARE_ACCESS])
