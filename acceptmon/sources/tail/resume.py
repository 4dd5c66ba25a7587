"""Resume a followed path from its checkpoint, across rotations while we were down.

Each stream entry names a file by identity (``dev:ino``) and by the
fingerprint of its first bytes. If the file is still at the path, reading
resumes at the checkpointed offset. Otherwise it is looked for among the
rotated siblings — by identity (rename) or fingerprint (copytruncate made a
copy) — and finished from the offset; then come whole siblings written after
it, then the current file from its start.
"""

from __future__ import annotations

import logging
from typing import Any

from acceptmon.sources.tail.entry import Entry
from acceptmon.sources.tail.follower import PathFollower
from acceptmon.sources.tail.fs import Handle
from acceptmon.sources.tail.siblings import DoneFiles, find_content
from acceptmon.sources.tail.stream import FileStream, identity_of, prefix_fingerprint

log = logging.getLogger("acceptmon.sources")


def resume(f: PathFollower, state: dict[str, Any]) -> None:
    """Rebuild ``f``'s streams from its checkpoint state (entries oldest first)."""
    raw = state.get("streams")
    entries = [e for e in map(Entry.from_json, raw if isinstance(raw, list) else []) if e is not None]
    f.done = DoneFiles.from_json(state.get("done"))
    f.registered = True
    h = _open_quietly(f)
    now = f.cfg.clock.monotonic()
    for e in entries:
        if h is not None and f.current is None and _is_at_path(e, h):
            f.adopt(h, e.offset, e.lineno)
            if not e.fp_len:
                f.catch_up()  # empty then: a copytruncate since leaves no trace in it
            h = None
            continue
        s = _locate(f, e)
        if s is None and f.read_past_copy(e.real, str(e.identity), e.fingerprint, e.fp_len, e.marks):
            continue
        if s is None:
            log.info("%s: resume: %s (%s) not found yet; looking again", f.cfg.source, e.real, e.identity)
            f.unfound.append(e)
            f.unfound_since = now
            continue
        s.idle_since = now
        f.detached.append(s)
    if h is not None:
        # Adopt first so that a copy of this file's content (copytruncate
        # between copy and truncate) is known as its copy, not read twice.
        f.adopt(h)
        f.catch_up()
    elif f.unfound:
        f.catch_up()


def _open_quietly(f: PathFollower) -> Handle | None:
    try:
        return f.cfg.fs.open(f.path)
    except OSError:
        return None  # the first look reports it


def _is_at_path(e: Entry, h: Handle) -> bool:
    st = h.stat()
    if identity_of(st) != str(e.identity) or st.size < e.offset:
        return False
    return not e.fp_len or prefix_fingerprint(h, e.fp_len) == e.fingerprint


def _locate(f: PathFollower, e: Entry) -> FileStream | None:
    hit = find_content(
        e.real,
        str(e.identity),
        e.fingerprint,
        e.fp_len,
        min_size=e.offset,
        fs=f.cfg.fs,
        known=e.marks,
    )
    if hit is None:
        return None
    log.info("%s: resuming %s in %s at offset %d", f.cfg.source, f.path, hit[1], e.offset)
    return FileStream(hit[0], e.real, e.offset, e.lineno, max_line=f.cfg.max_line)
