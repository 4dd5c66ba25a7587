"""The container SOURCE forms: ``kubernetes:[ROOT]`` and ``docker:[ROOT]`` → workloads and their files.

One log per workload (``namespace/workload/container``, or the Docker
container's name), its instances oldest first, so that the SOURCE grammar,
the live source and every command see the same series in the same order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from acceptmon.sources.container import docker, kubelet
from acceptmon.sources.container.workloads import OVERLAP_S, Instance, series_of

KUBERNETES = "kubernetes:"
DOCKER = "docker:"


def is_container(source: str) -> bool:
    return source.startswith((KUBERNETES, DOCKER))


def root_of(source: str) -> str:
    """The tree a container SOURCE names (its default when it names none)."""
    kind, _, root = source.partition(":")
    return root or (kubelet.DEFAULT_ROOT if kind + ":" == KUBERNETES else docker.DEFAULT_ROOT)


def discover(
    source: str,
    filters: kubelet.Filters = kubelet.ALL,
    overlap_s: float = OVERLAP_S,
    ended: Callable[[Instance], float] | None = None,
) -> dict[str, list[Instance]]:
    """Each workload's instances oldest first (``filters.containers`` names Docker containers too)."""
    root = root_of(source)
    if source.startswith(KUBERNETES):
        found = kubelet.instances(root, filters)
    else:
        found = docker.instances(root, filters.containers)
    return series_of(found, overlap_s, ended)


def map_path(path: str, path_map: Any) -> str:
    """``path`` (as the container sees it) where it is on the node: the longest mapped prefix
    replaced; unchanged when none maps it."""
    pairs = sorted(((str(k), str(v)) for k, v in dict(path_map or ()).items()), key=lambda kv: -len(kv[0]))
    for inside, outside in pairs:
        prefix = inside.rstrip("/")
        if path == prefix or path.startswith(prefix + "/"):
            return outside.rstrip("/") + path[len(prefix) :]
    return path
