"""Reading a followed path: rotated-away files to their end first, then the current one.

A rotated file stays open until it has been idle for ``rotate_wait`` seconds
(a writer may still finish a line into it); then its unterminated last line,
if any, is handed out and it is closed.
"""

from __future__ import annotations

import logging

from acceptmon.model import Chunk
from acceptmon.sources.tail.follower import PathFollower
from acceptmon.sources.tail.stream import FileStream

log = logging.getLogger("acceptmon.sources")

#: A chunk handed out, the stream it came from and the line number after it:
#: what ``commit`` needs to advance that stream's checkpointed position.
Emitted = tuple[Chunk, FileStream, int]


def read(f: PathFollower, budget: int) -> tuple[list[Emitted], int]:
    """Read rotated-away files first, then the current one, up to ``budget`` bytes."""
    chunks: list[Emitted] = []
    used = 0
    seen: list[FileStream] = []  # the objects themselves: ids of freed ones get reused
    # Draining may retire a file or queue newly found ones: walk until all are seen.
    while todo := [s for s in f.detached if s not in seen]:
        seen.append(todo[0])
        used += _drain_detached(f, todo[0], budget - used, chunks)
        if used >= budget:
            return chunks, used
    if f.current is not None and f.current.size > f.current.read_pos:
        used += _read_stream(f, f.current, budget - used, chunks)
    return chunks, used


def _drain_detached(f: PathFollower, s: FileStream, budget: int, chunks: list[Emitted]) -> int:
    if not _recheck(f, s):
        return 0
    now = f.cfg.clock.monotonic()
    if s.size > s.read_pos:
        s.idle_since = now
        return _read_stream(f, s, budget, chunks)
    if now - s.idle_since >= f.cfg.rotate_wait:
        last = s.finish(f.cfg.source, f.path)
        if last is not None:
            chunks.append((last, s, s.lineno))
        f.detached.remove(s)
        f.retire(s)
        log.info("%s: closed drained file %s", f.cfg.source, s.real)
    return 0


def _recheck(f: PathFollower, s: FileStream) -> bool:
    """Notice a rotated-away file being truncated or refilled; False: do not read it now."""
    assert s.handle is not None
    before, was_empty = (s.size, s.mtime_ns), not s.fp_len
    try:
        s.look(s.handle.stat())
        changed = (s.size, s.mtime_ns) != before
        replaced = (changed or s.stale) and (s.size < s.read_pos or not s.refresh_fingerprint())
    except OSError as e:
        f.fail("read_error", e)
        return False
    if changed and was_empty:
        at = f.detached.index(s)
        f.catch_up()  # a copytruncate would leave no trace in an empty file
        if f.detached.index(s) != at:
            return False  # read what was found first: it is older
    if replaced:
        # Truncated after it left our path: the old content goes on in its
        # copy, and what was written into it since is a file of its own.
        fresh = FileStream(s.give_up_handle(), s.real, max_line=f.cfg.max_line)
        fresh.idle_since = f.cfg.clock.monotonic()
        f.detached.insert(f.detached.index(s) + 1, fresh)
        if not f.move_to_copy(s, "truncated after rotation"):
            f.detached.remove(s)
            f.retire(s)
            return False
    return True


def _read_stream(f: PathFollower, s: FileStream, budget: int, chunks: list[Emitted]) -> int:
    used = 0
    while used < budget:
        want = min(f.cfg.read_size, budget - used)
        try:
            chunk, n = s.read(want, f.cfg.source, f.path)
        except OSError as e:
            f.fail("read_error", e)
            break
        used += n
        if chunk is not None:
            chunks.append((chunk, s, s.lineno))
        if n < want:
            break
    f.events.read(used)
    return used
