"""A followed file's chunks carry their decoded text (``Chunk.text``) exactly where it is the
lines joined, so the agent's bulk path searches it without joining the lines again."""

from __future__ import annotations

from pathlib import Path

from acceptmon.clock import ManualClock
from acceptmon.model import Chunk
from acceptmon.sources.local import LocalSource


def _chunks(path: Path, **kw: int) -> list[Chunk]:
    src = LocalSource("app", str(path), clock=ManualClock(), rotate_wait=5.0, **kw)
    out: list[Chunk] = []
    while got := src.poll():
        for c in got:
            out.append(c)
            src.commit(c)
    src.close()
    return out


def test_plain_lines_come_with_their_text(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_bytes(b"".join(b"line %d \xff\n" % i for i in range(5000)) + b"half")
    chunks = _chunks(log)
    assert chunks and all(c.text is not None and c.text == "\n".join(c.lines) for c in chunks)
    assert sum(len(c.lines) for c in chunks) == 5000


def test_text_is_absent_or_exact_where_lines_are_not_the_bytes(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_bytes(b"\0\0\0first\r\nsecond\n" + b"x" * 100 + b"\nlast\n")
    chunks = _chunks(log, max_line=50)
    assert [line for c in chunks for line in c.lines] == ["first", "second", "last"]
    assert all(c.text is None or c.text == "\n".join(c.lines) for c in chunks)
