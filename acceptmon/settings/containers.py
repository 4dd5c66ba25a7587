"""The keys only ``kubernetes:`` and ``docker:`` sources read: which containers, and where their files are.

``namespaces``, ``pod_prefix`` and ``containers`` pick the containers to follow
(a node runs many that are no inference server); ``path_map`` maps a path as
the container sees it (``/models``, named by ``server_args``) to where the
same files are on the node (the hostPath or volume behind it), so the draft
model's config.json can be read; ``handover_s`` is how long an older pod of a
workload must be quiet before a newer one is read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from acceptmon.settings.problems import Problems
from acceptmon.text.suggest import shown

CONTAINER_KEYS = frozenset({"namespaces", "pod_prefix", "containers", "path_map", "handover_s"})


def is_container_path(path: str) -> bool:
    return path.startswith(("kubernetes:", "docker:"))


def check_container_keys(item: Mapping[str, Any], where: str, problems: Problems) -> None:
    """Problems with a container source's own keys, or with one set on another kind of source."""
    if not is_container_path(str(item.get("path", ""))):
        problems += [
            f"{where}.{k}: only kubernetes: and docker: sources use it" for k in CONTAINER_KEYS & set(item)
        ]
        return
    for key in ("namespaces", "containers"):
        if key in item and _names(item[key]) is None:
            problems.append(f"{where}.{key}: expected a name or a list of names, got {shown(item[key])}")
    prefix = item.get("pod_prefix")
    if prefix is not None and not isinstance(prefix, str):
        problems.append(f"{where}.pod_prefix: expected a string, got {shown(prefix)}")
    handover = item.get("handover_s")
    if handover is not None and (
        isinstance(handover, bool) or not isinstance(handover, int | float) or not 0 <= handover <= 86_400
    ):
        problems.append(f"{where}.handover_s: expected seconds from 0 to 86400, got {shown(handover)}")
    if "path_map" in item:
        problems += [f"{where}.path_map: {p}" for p in _path_map_problems(item["path_map"])]


def _names(raw: Any) -> tuple[str, ...] | None:
    if raw is None:
        return ()
    if isinstance(raw, str):
        return (raw,)
    if isinstance(raw, list | tuple) and all(isinstance(n, str) and n for n in raw):
        return tuple(raw)
    return None


def _path_map_problems(raw: Any) -> list[str]:
    if not isinstance(raw, Mapping):
        return [f"expected a mapping of container path to node path, got {shown(raw)}"]
    return [
        f"{k!r}: both sides must be absolute paths (container path: node path)"
        for k, v in raw.items()
        if not (isinstance(k, str) and isinstance(v, str) and k.startswith("/") and v.startswith("/"))
    ]
