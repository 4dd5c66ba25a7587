"""Follow one path across rotations: its current file plus files rotated away.

Each poll looks at the path once (one ``stat``), classifies what happened to
the file we read, and reads rotated-away files to their end before the new
one. A rotated file stays open until it has been idle for ``rotate_wait``
seconds (a writer may still finish a line into it), then it is closed.
"""

from __future__ import annotations

import logging
import posixpath
from collections.abc import Iterator
from typing import Any

from acceptmon.sources.health import SourceEvents
from acceptmon.sources.rotation import FINGERPRINT_BYTES, FileState, classify
from acceptmon.sources.tail.context import FollowSettings
from acceptmon.sources.tail.entry import Entry
from acceptmon.sources.tail.fs import Handle, Stat
from acceptmon.sources.tail.siblings import DoneFiles, copy_identity, find_content, holds
from acceptmon.sources.tail.stream import FileStream, Known, identity_of, prefix_fingerprint

log = logging.getLogger("acceptmon.sources")

#: Unfound checkpoint entries still recognised after they were reported lost.
MAX_UNFOUND = 16


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
        if self.unfound_since is not None:
            self.catch_up()
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
        try:
            dir_mtime = self.cfg.fs.stat(posixpath.dirname(self.path) or ".").mtime_ns
        except OSError:
            return
        if dir_mtime != self._dir_mtime:
            self.catch_up()
        self._dir_mtime = dir_mtime

    def _compare(self, cur: FileStream, st: Stat) -> None:
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
        self.done.add(copy, fp, fp_len)
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
        for s in [s for s in self.detached if s.handle is not None and s.handle.size() <= s.read_pos]:
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
                s.refresh_fingerprint()  # a short fingerprint would mistake a new file for a copy
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
        # Files resume is still looking for come first (they are the oldest): a restart
        # now must look for them again rather than take them for unread when seen.
        waiting = self.unfound if self.unfound_since is not None else []
        return {
            "done": self.done.to_json(),
            "streams": [e.to_json() for e in waiting] + [s.entry().to_json() for s in self.streams()],
        }

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
