"""StreamSource over a real pipe; JournalSource over a fake journalctl script."""

from __future__ import annotations

import io
import os
import sys
import time
from pathlib import Path

from acceptmon.clock import ManualClock
from acceptmon.model import Chunk
from acceptmon.sources.journal import JournalSource
from acceptmon.sources.stdin import StreamSource


def test_stream_source_reads_a_pipe_without_blocking() -> None:
    r, w = os.pipe()
    with os.fdopen(r, "rb", buffering=0) as reader:
        src = StreamSource("stdin", reader)
        assert src.poll() == []  # nothing written: returns at once
        os.write(w, b"a\nb\npart")
        [c] = src.poll()
        assert (c.lines, c.lineno, c.end, c.source) == (("a", "b"), 1, None, "stdin")
        assert src.health().up
        os.write(w, b"ial\n")
        os.close(w)
        [c] = src.poll()
        assert (c.lines, c.lineno) == (("partial",), 3)
        assert src.poll() == [] and not src.health().up
        src.close()
        assert os.get_blocking(reader.fileno())  # flags handed back as found


def test_stream_source_hands_out_an_unterminated_last_line_at_eof() -> None:
    src = StreamSource("mem", io.BytesIO(b"x\nlast"))
    assert [c.lines for c in src.poll()] == [("x", "last")]
    assert src.health().bytes_read == 6 and not src.health().up
    assert src.checkpoint() == {}


FAKE = r"""
import json, signal, sys
args = sys.argv[1:]
print(json.dumps({"MESSAGE": "argv " + " ".join(args), "__CURSOR": "c0"}), flush=True)
if "--after-cursor" in args:
    print(json.dumps({"MESSAGE": "resumed", "__CURSOR": "c9"}), flush=True)
else:
    print(json.dumps({"MESSAGE": "hello", "__CURSOR": "c1"}), flush=True)
    print("not json", flush=True)
    print(json.dumps({"MESSAGE": list(b"bytes \xff"), "__CURSOR": "c2"}), flush=True)
    print(json.dumps({"MESSAGE": "two\nlines", "__CURSOR": "c3"}), flush=True)
    print(json.dumps({"__CURSOR": "c4"}), flush=True)
    print(json.dumps({"MESSAGE": "end", "__CURSOR": "c5"}), flush=True)
if "exit" in args:
    print("journalctl: boom", file=sys.stderr, flush=True)
    sys.exit(3)
signal.pause()  # follow mode: wait until killed, as journalctl -f does
"""


def fake(tmp_path: Path) -> list[str]:
    script = tmp_path / "journalctl.py"
    script.write_text(FAKE)
    return [sys.executable, str(script)]


def poll_until(src: JournalSource, n_lines: int, deadline: float = 10.0) -> list[Chunk]:
    chunks: list[Chunk] = []
    end = time.monotonic() + deadline
    while sum(len(c.lines) for c in chunks) < n_lines and time.monotonic() < end:
        chunks += src.poll()
    return chunks


def test_journal_messages_cursor_checkpoint_and_resume(tmp_path: Path) -> None:
    src = JournalSource("j", "sglang.service", clock=ManualClock(), command=fake(tmp_path))
    chunks = poll_until(src, 6)
    lines = [line for c in chunks for line in c.lines]
    assert lines == [
        "argv -u sglang.service -f -o json -n all",
        "hello",
        "bytes \ufffd",
        "two",
        "lines",
        "end",
    ]
    assert chunks[0].end is not None and chunks[0].path == "j"
    assert dict(src.health().errors).get("bad_json") == 1
    assert src.checkpoint() == {}  # nothing committed yet
    for c in chunks:
        src.commit(c)
    assert src.checkpoint() == {"cursor": "c5"}
    pid = src._proc.pid if src._proc else 0
    src.close()
    assert not os.path.exists(f"/proc/{pid}") or "zombie" in Path(f"/proc/{pid}/status").read_text().lower()

    again = JournalSource("j", "sglang.service", clock=ManualClock(), command=fake(tmp_path))
    again.restore({"cursor": "c5"})
    lines = [line for c in poll_until(again, 2) for line in c.lines]
    assert lines == ["argv -u sglang.service -f -o json --after-cursor c5", "resumed"]
    again.close()


def test_journal_child_exit_is_reported_and_restarted_later(tmp_path: Path) -> None:
    clock = ManualClock()
    src = JournalSource("j", "exit", clock=clock, command=fake(tmp_path), restart_interval=5)
    poll_until(src, 6)
    end = time.monotonic() + 10
    while src.health().up and time.monotonic() < end:
        src.poll()
    h = src.health()
    assert not h.up and dict(h.errors)["exited"] == 1 and "boom" in h.last_error
    assert src.poll() == []  # not before the restart interval
    clock.advance(5)
    lines = [line for c in poll_until(src, 2) for line in c.lines]
    assert lines[0].endswith("--after-cursor c5")
    src.close()


def test_journal_missing_binary_is_an_error_not_a_crash() -> None:
    src = JournalSource("j", "u", clock=ManualClock(), command=["/nonexistent/journalctl"])
    assert src.poll() == []
    assert dict(src.health().errors) == {"spawn_error": 1}
    src.close()
