"""Container instances → workloads: the one series a restart, a rollout or a re-created container continues.

A container's logs are one file per instance (kubelet: ``<restart>.log`` in a
pod's directory, Docker: ``<id>-json.log``). Files are not series: the run
before a change lives in the previous instance's file. ``Instance`` is one
container instance's log (its rotations oldest first); ``series_of`` groups
instances into workloads and orders each workload's instances by their start.

Two pods of one workload that ran side by side for longer than ``overlap_s``
(two replicas on one node) cannot be one series: the later one takes a
second slot of the workload (``series_of``).
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import datetime

from acceptmon.sources.rotation import READ_ERRORS, open_local

#: Characters of Kubernetes' generated name suffixes (``rand.SafeEncodeString``: no vowels, no 0/1/3).
_SAFE = "bcdfghjklmnpqrstvwxz2456789"
_RANDOM = re.compile(rf"[{_SAFE}]{{5}}")
_TEMPLATE_HASH = re.compile(rf"[{_SAFE}]{{6,10}}")

#: Instances of one workload that overlap longer than this are two replicas, not a rollout.
OVERLAP_S = 600.0


def workload_of(pod: str) -> str:
    """The workload a pod belongs to, from its name: a Deployment's pod loses its ReplicaSet hash
    and random suffix (``sglang-7d9f8b6c4-x2x9z`` → ``sglang``), a DaemonSet's or Job's its random
    suffix; a StatefulSet's or LeaderWorkerSet's pod keeps its ordinal (``sglang-0``)."""
    head, _, tail = pod.rpartition("-")
    if not head or not _RANDOM.fullmatch(tail) or tail.isdigit():
        return pod
    head2, _, hash_ = head.rpartition("-")
    if head2 and _TEMPLATE_HASH.fullmatch(hash_) and not hash_.isdigit():
        return head2
    return head


@dataclass(frozen=True, slots=True)
class Instance:
    """One container instance's log: the current file (``path``, followed live; it may be gone)
    and every file of it oldest first (rotations, then ``path`` when present)."""

    series: str
    path: str
    files: tuple[str, ...]
    #: When it started (its first line's runtime time, else its oldest file's mtime), epoch s.
    started: float
    #: Its restart count within its pod (kubelet), else 0: instances of one start order by it.
    restart: int = 0
    #: What alerts say about it: namespace, pod, container (kubelet) or container (Docker).
    labels: tuple[tuple[str, str], ...] = ()

    def label(self, key: str) -> str:
        return dict(self.labels).get(key, "")


def series_of(
    instances: Iterable[Instance],
    overlap_s: float = OVERLAP_S,
    ended: Callable[[Instance], float] | None = None,
) -> dict[str, list[Instance]]:
    """Each series with its instances oldest first.

    Pods of one workload that serve side by side (see above) take slots: the first is the
    workload's series, the second ``…#2`` and so on, each slot reused once its pod is over, so
    the number of series stays that of the replicas, however often pods are replaced. ``ended``
    tells when an instance last wrote (default: its last line's time); it is asked only where
    another pod of the workload follows."""
    ended = ended or (lambda i: last_time(i.files[-1]))
    grouped: dict[str, list[Instance]] = {}
    for inst in sorted(instances, key=lambda i: (i.series, i.started, i.restart, i.path)):
        grouped.setdefault(inst.series, []).append(inst)
    out: dict[str, list[Instance]] = {}
    for series, members in grouped.items():
        slots: list[Instance] = []  # the last instance of each slot
        for inst in members:
            pod = inst.label("pod")
            at = next((k for k, last in enumerate(slots) if pod and last.label("pod") == pod), None)
            if at is None:
                free = (
                    k for k, last in enumerate(slots) if not pod or inst.started >= ended(last) - overlap_s
                )
                at = next(free, len(slots))
            if at == len(slots):
                slots.append(inst)
            slots[at] = inst
            name = series if at == 0 else f"{series}#{at + 1}"
            out.setdefault(name, []).append(inst if at == 0 else replace(inst, series=name))
    return out


def listdir(path: str) -> list[str]:
    """A directory's names, sorted; none when it cannot be listed (gone, or no permission)."""
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def mtime(path: str) -> float:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return 0.0


#: How much of a file's start is read to find its first line's time.
_HEAD = 64 * 1024


def first_time(path: str) -> float | None:
    """The runtime's time on a container log's first line (CRI or json-file), epoch s; None if unknown.

    A file's first line never changes: read once per file (by inode), so a live rescan costs a stat."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return _first_time(path, st.st_dev, st.st_ino)


@functools.lru_cache(maxsize=4096)
def _first_time(path: str, _dev: int, _ino: int) -> float | None:
    """``first_time`` of one file (compressed rotations through the one decompression table)."""
    try:
        with open_local(path) as stream:
            head = stream.read(_HEAD)
    except READ_ERRORS:
        return None
    return _line_time(head.split(b"\n", 1)[0])


def last_time(path: str) -> float:
    """The runtime's time on an uncompressed container log's last line, epoch s; else its mtime
    (a copied tree's mtimes are the copy's: the lines' own times are kept)."""
    try:
        with open(path, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - _HEAD))
            tail = f.read(_HEAD)
    except OSError:
        return mtime(path)
    lines = tail.rstrip(b"\n").rsplit(b"\n", 1)
    found = _line_time(lines[-1]) if len(lines) == 2 or size <= _HEAD else None
    return found if found is not None else mtime(path)


def _line_time(raw_line: bytes) -> float | None:
    line = raw_line.decode("utf-8", "replace")
    raw: object = line.split(" ", 1)[0]
    if line.startswith("{"):
        try:
            raw = json.loads(line).get("time")
        except (ValueError, AttributeError, RecursionError):
            return None
    if not isinstance(raw, str) or len(raw) < 20 or raw[10:11] != "T":
        return None
    try:
        when = datetime.fromisoformat(raw)
    except ValueError:
        return None
    return when.timestamp() if when.tzinfo is not None else None
