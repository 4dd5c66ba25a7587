"""Follow one path across rotations over a ``FileSystem``: local (``localfs``), SFTP, or a fake.

Each poll looks at the path once (one ``stat``), classifies what happened to
the file we read, and reads rotated-away files to their end before the new
one. A rotated file stays open until it has been idle for ``rotate_wait``
seconds (a writer may still finish a line into it); then its unterminated last
line, if any, is handed out and it is closed.

Resuming from a checkpoint: each entry names a file by identity (``dev:ino``)
and by the fingerprint of its first bytes. If the file is still at the path,
reading resumes at the checkpointed offset. Otherwise it is looked for among
the rotated siblings (by identity: a rename; by fingerprint: copytruncate made
a copy) and finished from the offset; then come whole siblings written after
it, then the current file from its start.

Without inodes (SFTP) a file is told apart by its first bytes: the path holds
the file we read while it starts with the bytes we fingerprinted, and a stat
that did not change is trusted only once a look ``mtime_resolution_ns`` later
agrees (a same-size rewrite within one tick stats the same). An empty file is
followed once it has a first byte to be known by.
"""

from __future__ import annotations

import contextlib
import logging
import posixpath
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from acceptmon.clock import Clock
from acceptmon.model import Chunk
from acceptmon.sources.health import SourceEvents
from acceptmon.sources.rotation import FINGERPRINT_BYTES, FileState, classify
from acceptmon.sources.tail.entry import Entry
from acceptmon.sources.tail.fs import FileSystem, Handle, Stat
from acceptmon.sources.tail.siblings import DoneFiles, copy_identity, find_content, holds
from acceptmon.sources.tail.stream import FileStream, Known, NoIdentityYet, identity_of, prefix_fingerprint

log = logging.getLogger("acceptmon.sources")

#: Unfound checkpoint entries still recognised after they were reported lost.
MAX_UNFOUND = 16

#: With coarse mtimes an unchanged stat is trusted only after a full look this
#: many ticks (``FileSystem.mtime_resolution_ns``) after the one that saw it first.
TRUST_AFTER_TICKS = 2

#: A chunk handed out, the stream it came from and the line number after it:
#: what ``commit`` needs to advance that stream's checkpointed position.
Emitted = tuple[Chunk, FileStream, int]


@dataclass(frozen=True, slots=True)
class FollowSettings:
    """What a path follower shares with its source (its events go to ``SourceEvents``)."""

    source: str
    fs: FileSystem
    clock: Clock
    read_size: int
    rotate_wait: float
    max_line: int
    max_detached: int = 4


class PathFollower:
    """The files one path has named, oldest first: retired, detached, current.

    ``retired`` streams are closed but still have handed-out lines the consumer
    has not committed; they stay in checkpoints until it has. ``done`` knows
    the rotated siblings we finished or found on starting: any other sibling
    was rotated through the path while we were not looking and is read whole.
    """

    def __init__(
        self, path: str, cfg: FollowSettings, events: SourceEvents, *, start_at_end: bool = False
    ) -> None:
        self.path = path
        self.cfg = cfg
        self.events = events
        self.current: FileStream | None = None
        self.detached: list[FileStream] = []
        self.retired: list[FileStream] = []
        self.status = "new"
        self.start_at_end = start_at_end
        self.matched = True
        self.done = DoneFiles()
        #: Checkpointed files resume did not find: a listing raced with logrotate's
        #: renames, or a copy was still being filled. Found later, they go on from
        #: their offset (read whole, they would count twice). Looked for at every
        #: look for ``rotate_wait``, then reported lost (and still claimed if seen).
        self.unfound: list[Entry] = []
        self.unfound_since: float | None = None
        self.registered = False
        self._dir_mtime = 0
        #: When the directory was last listed for a changed mtime, and whether a later look confirmed it.
        self._dir_looked = (0.0, True)
        #: Coarse mtimes: the (size, mtime) a full look found, when, and whether a
        #: full look a few ticks later agreed (then the stat alone tells).
        self._seen: tuple[tuple[int, int], float, bool] | None = None

    def resume(self, state: dict[str, Any]) -> None:
        """Rebuild the streams from this path's checkpoint state (entries oldest first)."""
        raw = state.get("streams")
        entries = [e for e in map(Entry.from_json, raw if isinstance(raw, list) else []) if e is not None]
        self.done = DoneFiles.from_json(state.get("done"))
        self.registered = True
        h = self._open_quietly()
        now = self.cfg.clock.monotonic()
        for e in entries:
            if h is not None and self.current is None and _is_at_path(e, h):
                self.adopt(h, e.offset, e.lineno)
                if not e.fp_len:
                    self.catch_up()  # empty then: a copytruncate since leaves no trace in it
                h = None
                continue
            s = self._locate(e)
            if s is None and self.read_past_copy(e.real, str(e.identity), e.fingerprint, e.fp_len, e.marks):
                continue
            if s is None:
                log.info(
                    "%s: resume: %s (%s) not found yet; looking again", self.cfg.source, e.real, e.identity
                )
                self.unfound.append(e)
                self.unfound_since = now
                continue
            s.idle_since = now
            self.detached.append(s)
        if h is not None:
            # Adopt first so that a copy of this file's content (copytruncate
            # between copy and truncate) is known as its copy, not read twice.
            self.adopt(h)
            self.catch_up()
        elif self.unfound:
            self.catch_up()

    def _open_quietly(self) -> Handle | None:
        try:
            return self.cfg.fs.open(self.path)
        except OSError:
            return None  # the first look reports it

    def _locate(self, e: Entry) -> FileStream | None:
        hit = find_content(
            e.real,
            str(e.identity),
            e.fingerprint,
            e.fp_len,
            min_size=e.offset,
            fs=self.cfg.fs,
            known=e.marks,
        )
        if hit is None:
            return None
        log.info("%s: resuming %s in %s at offset %d", self.cfg.source, self.path, hit[1], e.offset)
        return FileStream(hit[0], e.real, e.offset, e.lineno, max_line=self.cfg.max_line)

    def read(self, budget: int) -> tuple[list[Emitted], int]:
        """Read rotated-away files first, then the current one, up to ``budget`` bytes."""
        chunks: list[Emitted] = []
        used = 0
        seen: list[FileStream] = []  # the objects themselves: ids of freed ones get reused
        # Draining may retire a file or queue newly found ones: walk until all are seen.
        while todo := [s for s in self.detached if s not in seen]:
            seen.append(todo[0])
            used += self._drain_detached(todo[0], budget - used, chunks)
            if used >= budget:
                return chunks, used
        if self.current is not None and self.current.size > self.current.read_pos:
            used += self._read_stream(self.current, budget - used, chunks)
        return chunks, used

    def _drain_detached(self, s: FileStream, budget: int, chunks: list[Emitted]) -> int:
        if not self._recheck(s):
            return 0
        now = self.cfg.clock.monotonic()
        if s.size > s.read_pos:
            s.idle_since = now
            return self._read_stream(s, budget, chunks)
        if now - s.idle_since >= self.cfg.rotate_wait:
            last = s.finish(self.cfg.source, self.path)
            if last is not None:
                chunks.append((last, s, s.lineno))
            self.detached.remove(s)
            self.retire(s)
            log.info("%s: closed drained file %s", self.cfg.source, s.real)
        return 0

    def _recheck(self, s: FileStream) -> bool:
        """Notice a rotated-away file being truncated or refilled; False: do not read it now."""
        assert s.handle is not None
        before, was_empty = (s.size, s.mtime_ns), not s.fp_len
        try:
            s.look(s.handle.stat())
            changed = (s.size, s.mtime_ns) != before
            replaced = (changed or s.stale) and (s.size < s.read_pos or not s.refresh_fingerprint())
        except FileNotFoundError:
            self._lose(s, "gone")
            return False
        except OSError as e:
            self.fail("read_error", e)
            return False
        if changed and was_empty:
            at = self.detached.index(s)
            self.catch_up()  # a copytruncate would leave no trace in an empty file
            if self.detached.index(s) != at:
                return False  # read what was found first: it is older
        if replaced:
            # Truncated after it left our path: the old content goes on in its
            # copy, and what was written into it since is a file of its own.
            h = s.give_up_handle()
            try:
                fresh = FileStream(h, s.real, max_line=self.cfg.max_line)
            except NoIdentityYet:
                h.close()  # empty and no inode: found as a sibling once it has content
            else:
                fresh.idle_since = self.cfg.clock.monotonic()
                self.detached.insert(self.detached.index(s) + 1, fresh)
            if not self.move_to_copy(s, "truncated after rotation"):
                self.detached.remove(s)
                self.retire(s)
                return False
        return True

    def _read_stream(self, s: FileStream, budget: int, chunks: list[Emitted]) -> int:
        used = 0
        while used < budget:
            want = min(self.cfg.read_size, budget - used)
            try:
                chunk, n = s.read(want, self.cfg.source, self.path)
            except FileNotFoundError:
                self._lose(s, "gone")
                break
            except OSError as e:
                self.fail("read_error", e)
                break
            used += n
            if chunk is not None:
                chunks.append((chunk, s, s.lineno))
            if n < want:
                break
        self.events.read(used)
        return used

    def streams(self) -> Iterator[FileStream]:
        yield from self.retired
        yield from self.detached
        if self.current is not None:
            yield self.current

    @property
    def idle(self) -> bool:
        """Nothing open and nothing awaiting commit: safe to forget."""
        return self.current is None and not self.detached and not self.retired

    def look(self) -> None:
        """Stat the path once and react to what happened since the last look."""
        if not self.matched:
            return
        if self.unfound_since is not None or not self.done.settled:
            self.catch_up()  # a file to find, or a listing caught mid-rotation
        try:
            st = self.cfg.fs.stat(self.path)
        except FileNotFoundError:
            self._missing()
            return
        except OSError as e:
            self.fail("permission_denied" if isinstance(e, PermissionError) else "stat_error", e)
            return
        if not st.regular:
            self._set_status("not_a_file", "not a regular file")
            return
        if self.current is None:
            self._open_current()
        else:
            self._compare(self.current, st)

    def _missing(self) -> None:
        """No file at the path: finish the old one; pick up files rotated through meanwhile."""
        self._set_status("missing", "no such file")
        if self.current is not None:
            self._detach("gone from its path")
        self._watch_dir()

    def _watch_dir(self) -> None:
        """Catch up when the path's directory changed (names came or went) since we last looked."""
        try:
            dir_mtime = self.cfg.fs.stat(posixpath.dirname(self.path) or ".").mtime_ns
        except OSError:
            return
        now = self.cfg.clock.monotonic()
        if dir_mtime != self._dir_mtime:
            self.catch_up()
            self._dir_looked = (now, self.cfg.fs.mtime_resolution_ns <= 1)
        elif not self._dir_looked[1] and now - self._dir_looked[0] >= self._trust_window():
            self.catch_up()  # coarse mtimes: names may have changed within the tick we looked in
            self._dir_looked = (now, True)
        self._dir_mtime = dir_mtime

    def _compare(self, cur: FileStream, st: Stat) -> None:
        if st.identity is None:
            if self._unchanged(cur, st):
                return
            try:
                ident = self._identity_at_path(cur)
            except FileNotFoundError:
                self._lose(cur, "gone")
                self._open_current()
                return
        else:
            ident = identity_of(st)
            if not cur.stale and ident == cur.identity and (st.size, st.mtime_ns) == (cur.size, cur.mtime_ns):
                return
        now = FileState(ident, st.size)
        if ident == cur.identity and cur.fp_len:
            assert cur.handle is not None
            fp = prefix_fingerprint(cur.handle, cur.fp_len)
            now = FileState(ident, st.size, fp or "short", cur.fp_len)
        change = classify(cur.state(), now, cur.read_pos)
        if change == "rotated":
            self.events.rotated()
            self._detach("rotated")
            self._open_current()
        elif change in ("truncated", "replaced"):
            copied = self._follow_copy(cur, change)
            if change == "truncated" or copied:
                self.events.truncated()
            else:
                self.events.rotated()
            self._open_current()
        else:
            if not cur.fp_len:
                # It was empty when we last looked, so a copytruncate since
                # then leaves no trace in it: its copy is a newer sibling.
                self.catch_up()
            cur.stale = False  # same content after all
            cur.look(st)
            if cur.fp_len < FINGERPRINT_BYTES:
                cur.refresh_fingerprint()

    def _unchanged(self, cur: FileStream, st: Stat) -> bool:
        """Without inodes: whether the stat alone says the path still holds what we last saw."""
        key, now = (st.size, st.mtime_ns), self.cfg.clock.monotonic()
        if cur.stale or key != (cur.size, cur.mtime_ns):
            self._seen = None
            return False
        if self._seen is None or self._seen[0] != key:
            self._seen = (key, now, False)
            return False
        _, at, confirmed = self._seen
        if confirmed or now - at < self._trust_window():
            return True
        self._seen = (key, at, True)  # one more full look, then the stat alone tells
        return False

    def distrust(self) -> None:
        """Files changed while we could not look (a dropped connection): look at them fully next time."""
        self._seen = None
        self._dir_looked = (self._dir_looked[0], False)

    def _trust_window(self) -> float:
        return TRUST_AFTER_TICKS * self.cfg.fs.mtime_resolution_ns / 1e9

    def _identity_at_path(self, cur: FileStream) -> str:
        """Without inodes: ``cur``'s identity if the path holds its file, by content.

        If our file no longer starts with its bytes it changed in place (truncated
        or rewritten: ``classify`` tells which); else the path names our file
        while it starts with them too, and another file otherwise.

        The path is read first: a copytruncate between the two reads then shows
        as our file changed (true: it is still at the path), where the other
        order saw our bytes, then the path's new ones, and took our file for
        rotated away, so that its new lines were read by two streams.
        """
        assert cur.handle is not None
        try:
            h = self.cfg.fs.open(self.path)
        except FileNotFoundError:
            at_path = ""  # renamed away since the stat: not ours at the path now
        else:
            try:
                at_path = prefix_fingerprint(h, cur.fp_len)
            finally:
                h.close()
        if prefix_fingerprint(cur.handle, cur.fp_len) != cur.fp:
            return cur.identity
        return cur.identity if at_path == cur.fp else "another file"

    def _lose(self, s: FileStream, why: str) -> None:
        """A file we read vanished (found nowhere after a reconnect): what was unread is lost."""
        if s is self.current:
            self.current = None
        elif s in self.detached:
            self.detached.remove(s)
        self.events.lost(
            f"{self.path}: {s.real} {why} before its end; lines after byte {s.read_pos} not read"
        )
        self.retire(s)

    def _follow_copy(self, cur: FileStream, change: str) -> bool:
        """The content we were reading left this inode: finish it from its copy if there is one."""
        self.current = None
        if not self.move_to_copy(cur, change):
            self.retire(cur)
            return False
        cur.idle_since = self.cfg.clock.monotonic()
        self.detached.append(cur)
        return True

    def move_to_copy(self, s: FileStream, change: str) -> bool:
        found = find_content(
            s.real,
            s.identity,
            s.fp,
            s.fp_len,
            min_size=s.read_pos,
            fs=self.cfg.fs,
            exclude=frozenset([s.identity]),
            known=s.head,
        )
        if found is None:
            if not self.read_past_copy(s.real, s.identity, s.fp, s.fp_len, s.head):
                log.warning("%s: %s %s; no copy of the old content found", self.cfg.source, self.path, change)
            return False
        s.move_to(found[0])
        log.info("%s: %s %s; finishing the old content from %s", self.cfg.source, self.path, change, found[1])
        return True

    def read_past_copy(self, real: str, identity: str, fp: str, fp_len: int, known: Known = ()) -> bool:
        """Whether this content's copy ends before where we read to: then the copy is done.

        Lines written between copytruncate's copy and its truncate are in no
        file afterwards; if we read some, the copy holds nothing new for us.
        """
        copy = copy_identity(real, identity, fp, fp_len, fs=self.cfg.fs, known=known) if fp_len else None
        if copy is None:
            return False
        self.done.add(*copy)
        log.info(
            "%s: %s: read past the end of the copy of %s; nothing left to read",
            self.cfg.source,
            self.path,
            real,
        )
        return True

    def _detach(self, why: str) -> None:
        cur, self.current = self.current, None
        assert cur is not None
        log.info("%s: %s %s; draining the old file", self.cfg.source, self.path, why)
        cur.idle_since = self.cfg.clock.monotonic()
        self.detached.append(cur)
        # Bound open files: beyond the cap, close files already read to their
        # end early (a late write to them is lost); never one with unread data.
        if len(self.detached) <= self.cfg.max_detached:
            return
        for s in [s for s in self.detached if _read_to_end(s)]:
            if len(self.detached) <= self.cfg.max_detached:
                break
            self.detached.remove(s)
            self.retire(s)

    def retire(self, s: FileStream) -> None:
        s.close()
        self.events.skipped_overlong(s.splitter.overlong)
        s.splitter.overlong = 0
        self.retired.append(s)
        self.prune()

    def catch_up(self) -> None:
        """Queue whole rotated files nobody has read (several rotations at once, or while down)."""
        real = self.cfg.fs.realpath(self.path)
        if not self.registered:
            self.registered = True
            self.done.register_existing(real, self.cfg.fs)
            return
        for s in self.streams():
            if s.handle is not None and s.fp_len < FINGERPRINT_BYTES:
                # A short fingerprint would mistake a new file for a copy. A file gone while a
                # connection was down is left as it is: draining it counts the loss.
                with contextlib.suppress(FileNotFoundError):
                    s.refresh_fingerprint()
        now = self.cfg.clock.monotonic()
        waiting = False
        for h, path, mtime_ns in self.done.unseen(real, self.streams(), self.cfg.fs):
            e, short = self._claim(h)
            if short:
                h.close()  # an unfound file's copy still being filled: not yet, and never whole
                waiting = True
                continue
            if e is None:
                new = FileStream(h, real, max_line=self.cfg.max_line)
                log.info("%s: %s: reading %s, rotated before we saw it", self.cfg.source, self.path, path)
            else:
                new = FileStream(h, e.real, e.offset, e.lineno, max_line=self.cfg.max_line)
                log.info("%s: resuming %s in %s at offset %d", self.cfg.source, self.path, path, e.offset)
            new.idle_since = now
            self.detached.insert(self._slot(mtime_ns), new)
        since = self.unfound_since
        if since is not None and self.done.settled and not waiting and now - since >= self.cfg.rotate_wait:
            for e in self.unfound:
                message = f"resume: lost the rest of {e.real} ({e.identity}) after offset {e.offset}"
                self.events.error("resume_lost", message)
            self.unfound_since = None
            del self.unfound[:-MAX_UNFOUND]

    def _claim(self, h: Handle) -> tuple[Entry | None, bool]:
        """The unfound checkpoint entry whose file ``h`` is (it is then found), and
        whether ``h`` starts like one but is shorter than its offset (a copy being filled)."""
        short = False
        for e in self.unfound:
            try:
                if holds(h, str(e.identity), e.fingerprint, e.fp_len, e.offset, e.marks):
                    self.unfound.remove(e)
                    return e, False
                short = short or (e.fp_len > 0 and holds(h, "", e.fingerprint, e.fp_len, 0, e.marks))
            except OSError:
                continue
        return None, short

    def _slot(self, mtime_ns: int) -> int:
        """Where a file last written at ``mtime_ns`` goes among the files to drain.

        After every file we have read from (its content came first), before a
        file we have read nothing of that was written later.
        """
        for i, s in enumerate(self.detached):
            if s.read_pos == 0 and s.handle is not None and s.handle.stat().mtime_ns > mtime_ns:
                return i
        return len(self.detached)

    def _open_current(self) -> None:
        self._open_path()
        # Only now: a copytruncate caught between its copy and its truncate
        # left a sibling starting with the new file's bytes; knowing the new
        # file, catch_up takes that sibling for its copy, not for unread content.
        self.catch_up()

    def _open_path(self) -> None:
        try:
            h = self.cfg.fs.open(self.path)
        except FileNotFoundError:
            self._set_status("missing", "no such file")
            return
        except PermissionError as e:
            self.fail("permission_denied", e)
            return
        except OSError as e:
            self.fail("open_error", e)
            return
        self.adopt(h)

    def adopt(self, h: Handle, start: int = 0, lineno: int = 1) -> None:
        """Make the file open at ``h`` (found at our path) the current one."""
        try:
            s = FileStream(h, self.cfg.fs.realpath(self.path), start, lineno, max_line=self.cfg.max_line)
            if self.start_at_end:
                s.skip_to_end(self.cfg.read_size)
        except NoIdentityYet:
            h.close()  # empty, and no inode to know it by: followed from its first byte
            self._set_status("ok", "")
            return
        except OSError as e:
            h.close()
            self.fail("read_error", e)
            return
        self.start_at_end = False
        self.current = s
        self._set_status("ok", "")

    def leave(self) -> None:
        """The path no longer belongs to the source: finish what is open, open nothing new."""
        self.matched = False
        if self.current is not None:
            self._detach("no longer matches")

    def take_over(self, s: FileStream) -> None:
        """Continue ``s`` as this path's current file (it was renamed to this path)."""
        s.real = self.cfg.fs.realpath(self.path)
        self.current = s
        self._set_status("ok", "")

    def take_detached(self, identity: str) -> FileStream | None:
        """Hand over a rotated-away file that reappeared under another followed name."""
        for s in self.detached:
            if s.identity == identity:
                self.detached.remove(s)
                return s
        return None

    def prune(self) -> None:
        """Forget closed files whose lines are all committed (remember them as done)."""
        for s in [s for s in self.retired if s.committed >= s.emitted]:
            self.retired.remove(s)
            self.done.add(s.identity, s.fp, s.fp_len)

    def state(self) -> dict[str, Any]:
        """This path's part of a checkpoint."""
        done, entries = self.parts()
        return {"done": done, "streams": [e.to_json() for _, e in entries]}

    def parts(self) -> tuple[dict[str, Any], list[tuple[FileStream | None, Entry]]]:
        """``state`` before it is JSON: the done files, and each entry with its stream (if open)."""
        # Files resume is still looking for come first (they are the oldest): a restart
        # now must look for them again rather than take them for unread when seen.
        waiting = self.unfound if self.unfound_since is not None else []
        entries: list[tuple[FileStream | None, Entry]] = [(None, e) for e in waiting]
        return self.done.to_json(), entries + [(s, s.entry()) for s in self.streams()]

    def close(self) -> None:
        for s in self.streams():
            s.close()

    def fail(self, kind: str, e: OSError) -> None:
        """An error with our path: counted and logged once while it lasts (``SourceEvents``)."""
        self.events.problem(self.path, kind, f"{kind.replace('_', ' ')}: {self.path}: {e.strerror or e}")
        self.status = kind

    def _set_status(self, status: str, message: str) -> None:
        """A state of the path that is no error (following it, or waiting for it)."""
        if status == self.status:
            return
        self.events.ok(self.path)
        if status == "ok":
            log.info("%s: following %s", self.cfg.source, self.path)
        else:
            log.warning("%s: %s: %s", self.cfg.source, self.path, message or status)
        self.status = status


def _read_to_end(s: FileStream) -> bool:
    """Whether ``s`` has nothing left to read now; False when that cannot be told (its file
    vanished while a connection was down: draining it finds that out and counts the loss)."""
    try:
        return s.handle is not None and s.handle.size() <= s.read_pos
    except OSError:
        return False


def _is_at_path(e: Entry, h: Handle) -> bool:
    """Whether the file open at the path is the entry's, still holding what was read of it
    (without inodes: starting with what was fingerprinted of it)."""
    st = h.stat()
    if st.size < e.offset or (st.identity is None and not e.fp_len):
        return False
    if st.identity is not None and identity_of(st) != str(e.identity):
        return False
    return not e.fp_len or prefix_fingerprint(h, e.fp_len) == e.fingerprint
