"""kubelet's container log tree: ``ROOT/<namespace>_<pod>_<uid>/<container>/<restart>.log``.

kubelet writes each container instance's output to ``<restart>.log`` (CRI
format) and rotates it by renaming to ``<restart>.log.<YYYYMMDD-hhmmss>``,
gzipping older rotations (``….gz``; ``….tmp`` while it compresses). A pod's
directory goes when the pod is deleted. Names only are read here, and each
instance's first line for its start time.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from acceptmon.sources.container.workloads import Instance, first_time, listdir, mtime, workload_of
from acceptmon.sources.rotation import readable

DEFAULT_ROOT = "/var/log/pods"

#: ``<namespace>_<pod>_<uid>``: namespaces and pod names are DNS names (no ``_``).
_POD_DIR = re.compile(r"([a-z0-9][-a-z0-9]*)_([a-z0-9][-.a-z0-9]*)_([-0-9a-fA-F]{8,})")
_CURRENT = re.compile(r"(\d+)\.log")
_ROTATED = re.compile(r"(\d+)\.log\.\d{8}-\d{6}(\.gz)?")


@dataclass(frozen=True, slots=True)
class Filters:
    """Which containers a ``kubernetes:`` source follows (empty: all)."""

    namespaces: tuple[str, ...] = ()
    pod_prefix: str = ""
    containers: tuple[str, ...] = ()

    @classmethod
    def of(cls, namespaces: Any, pod_prefix: Any, containers: Any) -> Filters:
        """From a source's checked settings (a name or a list of names; None: all)."""
        return cls(_names(namespaces), str(pod_prefix or ""), _names(containers))

    def keep(self, namespace: str, pod: str, container: str) -> bool:
        return (
            (not self.namespaces or namespace in self.namespaces)
            and pod.startswith(self.pod_prefix)
            and (not self.containers or container in self.containers)
        )


def _names(raw: Any) -> tuple[str, ...]:
    if isinstance(raw, str):
        return (raw,)
    return tuple(str(n) for n in raw) if isinstance(raw, list | tuple) else ()


#: Every container of every pod.
ALL = Filters()


def pod_dir(name: str) -> tuple[str, str, str] | None:
    """(namespace, pod, uid) of a pod's log directory name, or None for anything else."""
    m = _POD_DIR.fullmatch(name)
    return (m.group(1), m.group(2), m.group(3)) if m else None


def instances(root: str, filters: Filters = ALL) -> list[Instance]:
    """Every container instance under ``root`` (unreadable directories are skipped)."""
    found: list[Instance] = []
    for entry in listdir(root):
        ids = pod_dir(entry)
        if ids is None:
            continue
        namespace, pod, _ = ids
        for container in listdir(os.path.join(root, entry)):
            if filters.keep(namespace, pod, container):
                found += _container(os.path.join(root, entry, container), namespace, pod, container)
    return found


def instances_of_dir(directory: str, namespace: str, pod: str, container: str) -> list[Instance]:
    """The instances in one container's directory."""
    return _container(directory, namespace, pod, container)


def _container(directory: str, namespace: str, pod: str, container: str) -> list[Instance]:
    by_restart: dict[int, list[str]] = {}
    for name in listdir(directory):
        m = _CURRENT.fullmatch(name) or _ROTATED.fullmatch(name)
        if m is not None and readable(name):
            by_restart.setdefault(int(m.group(1)), []).append(name)
    series = f"{namespace}/{workload_of(pod)}/{container}"
    labels = (("container", container), ("namespace", namespace), ("pod", pod))
    out = []
    for restart, names in sorted(by_restart.items()):
        current = f"{restart}.log"
        # kubelet's stamps sort by name; the current file is the newest.
        files = [os.path.join(directory, n) for n in sorted(n for n in names if n != current)]
        if current in names:
            files.append(os.path.join(directory, current))
        started = first_time(files[0])
        out.append(
            Instance(
                series,
                os.path.join(directory, current),
                tuple(files),
                started if started is not None else mtime(files[0]),
                restart,
                labels,
            )
        )
    return out
