"""Which paths file events touched, so quiet files need not be stat-ed every poll.

With events, a quiet file is looked at when an event names it (or at a slow
backstop interval); without them — or in a directory the watcher could not
watch — every poll looks at every file, as before. Idle cost then scales with
events, not with the number of files followed.

Events name files that come, go or move (the watcher does not subscribe to
writes): a line appended to a quiet file is found at the backstop, or at once
when a scrape asks for fresh data (``look_everywhere``).
"""

from __future__ import annotations

import bisect
import os
import threading

#: Recent events kept; a reader further behind than this looks at everything.
MAX_EVENTS = 20_000


class FileEvents:
    """Thread-safe: the watcher thread records, the ingestion thread asks (paths absolute)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seq = 0
        self._seqs: list[int] = []
        self._paths: list[str] = []
        self._dirs: frozenset[str] = frozenset()
        #: Readers that last asked before this event number look at everything.
        self._blind = 0

    def watching(self, directory: str) -> None:
        with self._lock:
            self._dirs = self._dirs | {os.path.abspath(directory)}

    def not_watching(self) -> None:
        """Events stopped: back to polling everywhere."""
        with self._lock:
            self._dirs = frozenset()

    def record(self, path: str) -> None:
        with self._lock:
            self._seq += 1
            self._seqs.append(self._seq)
            self._paths.append(os.path.abspath(path))
            if len(self._seqs) > 2 * MAX_EVENTS:
                del self._seqs[:-MAX_EVENTS], self._paths[:-MAX_EVENTS]

    def look_everywhere(self) -> None:
        """Every reader's next ask answers None (look at every file): appends name no file."""
        with self._lock:
            self._seq += 1
            self._blind = self._seq

    def dirs(self) -> frozenset[str]:
        """Directories events arrive for."""
        return self._dirs

    def touched_since(self, seq: int) -> tuple[int, set[str] | None]:
        """The current event number and the paths named after ``seq`` (None: too many to know)."""
        with self._lock:
            if seq == self._seq:
                return seq, set()
            if seq < self._blind or (self._seqs and self._seqs[0] > seq + 1):
                return self._seq, None
            i = bisect.bisect_right(self._seqs, seq)
            return self._seq, set(self._paths[i:])
