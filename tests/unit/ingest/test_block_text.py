"""The bulk path reads a chunk as one string: the reader's own decoded text, searched whole.

``read_chunks`` hands on the text it split (``Chunk.text``) where that is exactly the
lines joined, so the bulk path never joins a million lines again; where it is not (a
carriage return stripped, an overlong line dropped, a container log unwrapped) there is
none, and the bulk path joins the lines itself. The marker searches over that text
(``_holds``, ``_REQUEST_SCANS``) answer as a search of every line for every marker would.
"""

from __future__ import annotations

import io
import json
from datetime import datetime

from acceptmon.ingest import Pipeline, bulk
from acceptmon.model import Chunk
from acceptmon.parse.markers import EVENT_MARKERS, REQUEST_MARKERS
from acceptmon.sources.chunks import read_chunks
from acceptmon.sources.lines import READ_SIZE
from acceptmon.testing.synth import decode_line

T0 = datetime(2026, 1, 1)
START = "[2026-01-01 00:00:00] server_args=ServerArgs(speculative_algorithm='EAGLE', speculative_num_steps=3)"


def _chunks(data: bytes) -> list[Chunk]:
    return [chunk for chunk, _ in read_chunks("gpu", io.BytesIO(data), "gpu.log")]


def test_a_plain_file_hands_on_its_text_as_the_lines_joined() -> None:
    lines = [START] + [decode_line(T0, 2.0 + i % 7 / 10) for i in range(20_000)]
    data = ("\n".join(lines) + "\nunterminated last line").encode()
    chunks = _chunks(data)
    assert len(chunks) > 1 and len(data) > READ_SIZE  # read in several pieces
    assert all(c.text == "\n".join(c.lines) for c in chunks)
    assert [line for c in chunks for line in c.lines] == [*lines, "unterminated last line"]


def test_no_text_where_the_lines_are_not_the_decoded_text() -> None:
    crlf = _chunks(b"a\r\nb\r\n")
    assert crlf[0].lines == ("a", "b") and crlf[0].text is None
    record = {"log": "[2026-01-01 00:00:00] hello\n", "stream": "stdout", "time": "2026-01-01T00:00:00Z"}
    docker = _chunks((json.dumps(record) + "\n").encode())
    assert docker[0].lines == ("[2026-01-01 00:00:00] hello",) and docker[0].text is None


def test_text_is_not_compared_or_shown() -> None:
    with_text = Chunk("gpu", ("a", "b"), 1, text="a\nb")
    assert with_text == Chunk("gpu", ("a", "b"), 1) and "a\\nb" not in repr(with_text)


def test_a_chunk_with_its_text_feeds_exactly_as_one_without() -> None:
    noise = [
        f"[2026-01-01 00:00:{s:02d}] INFO:     127.0.0.1:{4000 + s} - GET /health 200 OK" for s in range(60)
    ]
    lines = (START, *(line for i, n in enumerate(noise) for line in (n, decode_line(T0, 2.0 + i % 5 / 10))))
    out = []
    for text in ("\n".join(lines), None):
        pipeline = Pipeline()
        pipeline.feed(Chunk("gpu", lines, 1, text=text))
        out.append(pipeline.store.checkpoint())
    assert out[0] == out[1] and out[0]["gpu"]["counters"]["decode_batches"] == 60


def test_event_markers_are_found_among_lines_differing_only_in_digits() -> None:
    noise = [
        f"[2026-01-01 00:00:{s:02d}] INFO:     127.0.0.1:{4000 + s} - GET /health 200 OK" for s in range(60)
    ]
    assert not bulk._holds(noise)
    for marker in EVENT_MARKERS:  # digits fold alike in the line and in the marker
        assert bulk._holds([*noise, f"[2026-01-01 00:01:07 DP3] {marker} 12345"]), marker


def test_every_request_marker_is_found_by_one_of_the_scans() -> None:
    found = [m for scan, markers in bulk._REQUEST_SCANS.items() for m in markers if m.startswith(scan)]
    assert sorted(found) == sorted(REQUEST_MARKERS)
    assert len(bulk._REQUEST_SCANS) < len(REQUEST_MARKERS)
