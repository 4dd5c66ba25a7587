"""A file read once, start to end → Chunks: what every offline command reads logs through."""

from __future__ import annotations

from collections.abc import Iterator

from acceptmon.model import Chunk
from acceptmon.sources.container.splitter import ContainerSplitter
from acceptmon.sources.lines import READ_SIZE, Lines, Readable


def read_chunks(
    source: str, stream: Readable, path: str = "", lazy: bool = False
) -> Iterator[tuple[Chunk, int]]:
    """Yield (chunk, overlong lines dropped) until end of stream; a final unterminated line counts.
    ``lazy``: a plain file's chunks hold ``Lines``, split only when read (``sources/lines.py``).

    Container logs (Docker json-file, CRI) are unwrapped (``ContainerSplitter``): a chunk then
    carries the runtime's times and the container errors met; ``lineno`` counts raw lines.
    """
    splitter = ContainerSplitter(lazy=lazy)
    lineno = 1
    dropped = 0
    data = stream.read(READ_SIZE)
    while True:
        lines, _ = splitter.feed(data) if data else splitter.finish()
        errors = splitter.take_errors()
        if lines or errors or splitter.overlong > dropped:
            times = tuple(splitter.times) if splitter.times is not None else None
            chunk = Chunk(
                source,
                lines if isinstance(lines, Lines) else tuple(lines),
                lineno,
                None,
                path,
                times,
                errors,
                splitter.text,
            )
            yield chunk, splitter.overlong - dropped
            dropped = splitter.overlong
        lineno += splitter.lines_read
        if not data:
            return
        data = stream.read(READ_SIZE)
