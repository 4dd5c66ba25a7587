"""A node's container logs followed live as workloads (``kubernetes:`` and ``docker:`` sources).

Each container instance's current file is followed by a ``LocalSource`` of
its own (rotation, truncation and checkpoints as for any file), named after
its workload's series, so a restart's ``1.log`` or a rollout's new pod
continues the series the run before it is in. The instances of one series
are read in order: a later one waits until every earlier one is read to its
end and is over (its file gone, its container restarted, or quiet for
``handover_s``, as an old pod is once the rollout stops it), so the new run
never meets the old pod's last lines. A later pod held back longer than the
overlap allows is a second replica: rediscovery gives it a series of its own.
Instances whose files are gone and read stop being followed (and leave the
checkpoint), so pod churn does not grow the agent.
"""

from __future__ import annotations

import logging
import os
from collections import deque
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from acceptmon.clock import Clock
from acceptmon.model import Chunk
from acceptmon.sources.base import SourceHealth
from acceptmon.sources.container.kubelet import ALL, Filters
from acceptmon.sources.container.tree import discover, root_of
from acceptmon.sources.container.workloads import OVERLAP_S, Instance
from acceptmon.sources.events import FileEvents
from acceptmon.sources.local import LocalSource
from acceptmon.statefiles import CHECKPOINT_VERSION

log = logging.getLogger("acceptmon.sources")

#: An older instance quiet this long (its file unwritten) is over: the next one is read.
HANDOVER_S = 30.0


@dataclass(slots=True)
class _Member:
    """One followed instance: its file's source, and whether its turn has come."""

    instance: Instance
    series: str
    source: LocalSource
    reading: bool = False


class WorkloadSource:
    """Follows ``kubernetes:[ROOT]`` or ``docker:[ROOT]``; see ``Source`` for the contract.

    Series are ``NAME:namespace/workload/container`` (Docker: ``NAME:container``; without a
    NAME, the series alone, as the SOURCE grammar names them). ``whole`` names files read from
    their beginning even when ``from_beginning`` is False (``runs --follow`` read the rest).
    """

    def __init__(
        self,
        name: str,
        spec: str,
        *,
        clock: Clock,
        from_beginning: bool = True,
        filters: Filters = ALL,
        events: FileEvents | None = None,
        rescan_interval: float = 2.0,
        handover_s: float = HANDOVER_S,
        overlap_s: float = OVERLAP_S,
        whole: Collection[str] = (),
    ) -> None:
        self.name = name
        self.spec = spec
        self.root = root_of(spec)
        self._clock = clock
        self._from_beginning = from_beginning
        self._filters = filters
        self._events = events
        self._rescan_interval = rescan_interval
        self._handover_s = handover_s
        self._overlap_s = overlap_s
        self._whole = frozenset(whole)
        #: Followed instances by current path, and each series' paths oldest first.
        self._members: dict[str, _Member] = {}
        self._order: dict[str, list[str]] = {}
        self._handed: deque[tuple[Chunk, _Member]] = deque()
        self._restored: dict[str, Any] = {}
        self._started = False
        self._next_scan = 0.0

    # -- the Source contract ------------------------------------------------------------------

    def restore(self, state: dict[str, Any]) -> None:
        members = state.get("members") if isinstance(state, dict) else None
        if isinstance(members, dict):
            self._restored = {p: m for p, m in members.items() if isinstance(m, dict)}
        elif state:
            log.warning("%s: ignoring a checkpoint this version cannot read", self.name)

    def poll(self) -> list[Chunk]:
        now = self._clock.monotonic()
        if not self._started or now >= self._next_scan:
            self._scan()
            self._next_scan = now + self._rescan_interval
        out: list[Chunk] = []
        for paths in self._order.values():
            for path in paths:
                member = self._members[path]
                if not member.reading:
                    break
                chunks = member.source.poll()
                self._handed.extend((c, member) for c in chunks)
                out += chunks
                if not self._over(member, paths):
                    break
            self._admit(paths)
        self._forget_gone()
        return out

    def commit(self, chunk: Chunk) -> None:
        """Mark ``chunk`` and every chunk handed out before it as processed."""
        if not any(c is chunk for c, _ in self._handed):
            return
        last: dict[int, tuple[Chunk, _Member]] = {}
        while self._handed:
            c, member = self._handed.popleft()
            last[id(member)] = (c, member)
            if c is chunk:
                break
        for c, member in last.values():
            member.source.commit(c)

    def checkpoint(self) -> dict[str, Any]:
        members = dict(self._restored) if not self._started else {}
        for path, m in self._members.items():
            members[path] = {"series": m.series, "reading": m.reading, "state": m.source.checkpoint()}
        return {"version": CHECKPOINT_VERSION, "members": members}

    def health(self) -> SourceHealth:
        parts = [m.source.health() for m in self._members.values() if m.reading]
        errors: dict[str, int] = {}
        for h in parts:
            for kind, n in h.errors:
                errors[kind] = errors.get(kind, 0) + n
        return SourceHealth(
            up=os.path.isdir(self.root) and all(h.up for h in parts),
            bytes_read=sum(h.bytes_read for h in parts),
            rotations=sum(h.rotations for h in parts),
            truncations=sum(h.truncations for h in parts),
            lag_bytes=sum(h.lag_bytes for h in parts),
            open_files=sum(h.open_files for h in parts),
            overlong_lines=sum(h.overlong_lines for h in parts),
            errors=tuple(sorted(errors.items())),
            last_error=next((h.last_error for h in parts if h.last_error), ""),
        )

    def close(self) -> None:
        for m in self._members.values():
            m.source.close()
        self._members.clear()
        self._handed.clear()

    # -- what the agent asks besides ----------------------------------------------------------

    def watch_dirs(self) -> list[str]:
        """The tree's root and each followed file's directory: events there wake the poller."""
        dirs = {self.root} | {os.path.dirname(p) for p in self._members}
        return sorted(d for d in dirs if os.path.isdir(d))

    def identity(self, series: str) -> tuple[tuple[str, str], ...]:
        """The labels of a series' current instance (namespace, pod, container)."""
        paths = self._order.get(series, [])
        reading = [self._members[p] for p in paths if self._members[p].reading]
        return reading[-1].instance.labels if reading else ()

    def series(self) -> list[str]:
        return sorted(self._order)

    # -- inside -------------------------------------------------------------------------------

    def _scan(self) -> None:
        first = not self._started
        self._started = True
        found = discover(self.spec, self._filters, self._overlap_s)
        order: dict[str, list[str]] = {}
        for series, instances in found.items():
            name = f"{self.name}:{series}" if self.name else series
            for inst in instances:
                member = self._member(inst, name, first)
                order.setdefault(member.series, []).append(inst.path)
        # Followed files that discovery no longer lists (filtered away, pod gone) keep their place.
        for path, m in self._members.items():
            if all(path not in paths for paths in order.values()):
                order.setdefault(m.series, []).insert(0, path)
        self._order = order
        for paths in order.values():
            self._admit(paths)
        self._restored = {}

    def _member(self, inst: Instance, series: str, first: bool) -> _Member:
        m = self._members.get(inst.path)
        if m is not None and (m.series == series or m.reading):
            m.instance = inst
            return m
        if m is not None:  # held back, and now a replica of its own: nothing of it was read yet
            m.source.close()
        saved = self._restored.get(inst.path, {})
        begin = self._from_beginning or not first or bool(saved) or inst.path in self._whole
        source = LocalSource(series, inst.path, from_beginning=begin, clock=self._clock, events=self._events)
        state = saved.get("state")
        if isinstance(state, dict) and saved.get("series") == series:
            source.restore(state)
        member = _Member(
            inst, series, source, reading=bool(saved.get("reading")) and saved.get("series") == series
        )
        self._members[inst.path] = member
        return member

    def _admit(self, paths: list[str]) -> None:
        """Let the series' next instance be read once every one before it is over."""
        for path in paths:
            member = self._members[path]
            if not member.reading:
                member.reading = True
                log.info("%s: reading %s", member.series, member.instance.label("pod") or path)
                return
            if not self._over(member, paths):
                return

    def _over(self, member: _Member, paths: list[str]) -> bool:
        """Read to its end and never to be written again (see the module docstring)."""
        if member.source.health().lag_bytes:
            return False
        path = member.instance.path
        later = paths[paths.index(path) + 1 :] if path in paths else []
        if not later:
            return False
        nxt = self._members[later[0]].instance
        if nxt.label("pod") and nxt.label("pod") == member.instance.label("pod"):
            return True  # the container restarted: the old instance has exited
        try:
            quiet = self._clock.now() - os.stat(path).st_mtime
        except OSError:
            return True
        return quiet >= self._handover_s

    def _forget_gone(self) -> None:
        """Drop instances whose files are gone and read: an older one once its file is gone, the
        newest once its directory is (its pod deleted; a kubelet rotation only briefly leaves the
        path empty). A series with none left is gone: its pod labels go with it."""
        for series, paths in list(self._order.items()):
            for path in list(paths):
                member = self._members[path]
                newest = path == paths[-1]
                gone = not os.path.exists(path) and not (newest and os.path.isdir(os.path.dirname(path)))
                if member.reading and gone and not member.source.health().lag_bytes:
                    member.source.close()
                    del self._members[path]
                    paths.remove(path)
            if not paths:
                del self._order[series]
