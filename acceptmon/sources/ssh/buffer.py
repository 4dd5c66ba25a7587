"""A bounded hand-over of chunks from a host's worker thread to ``poll()``.

The worker asks for ``room()`` before every read, so a consumer that falls
behind makes the worker stop reading instead of growing memory.
"""

from __future__ import annotations

import threading
from collections import deque

from acceptmon.model import Chunk


def chunk_bytes(chunk: Chunk) -> int:
    return sum(map(len, chunk.lines)) + len(chunk.lines)


class ChunkBuffer:
    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._chunks: deque[Chunk] = deque()
        self._size = 0
        self._lock = threading.Lock()

    def room(self) -> int:
        return self.max_bytes - self._size

    def put(self, chunk: Chunk) -> None:
        with self._lock:
            self._chunks.append(chunk)
            self._size += chunk_bytes(chunk)

    def drain(self) -> tuple[list[Chunk], bool]:
        """All buffered chunks, and whether the buffer had been full (the worker may be waiting)."""
        with self._lock:
            was_full = self._size >= self.max_bytes
            out = list(self._chunks)
            self._chunks.clear()
            self._size = 0
        return out, was_full
