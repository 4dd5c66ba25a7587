"""Docker's container tree: ``ROOT/<id>/<id>-json.log`` beside ``config.v2.json``.

The json-file driver writes ``<id>-json.log`` and rotates it to
``<id>-json.log.1``, ``.2``, … (higher is older; ``.gz`` when compressed).
The container's name (``"Name": "/sglang"``) and creation time come from
``config.v2.json``, of which nothing else is kept: its ``Env`` may hold secrets.
A re-created container (``docker rm`` + ``docker run --name sglang``) has a new
id and the same name: the same workload.
"""

from __future__ import annotations

import json
import logging
import os
import re
from datetime import datetime

from acceptmon.sources.container.workloads import Instance, first_time, listdir, mtime
from acceptmon.sources.rotation import readable
from acceptmon.text.printable import printable

log = logging.getLogger("acceptmon.sources")

DEFAULT_ROOT = "/var/lib/docker/containers"
_ID = re.compile(r"[0-9a-f]{12,64}")
#: config.v2.json is a few KB; a larger one is not read whole.
_MAX_CONFIG = 4 << 20


def instances(root: str, names: tuple[str, ...] = ()) -> list[Instance]:
    """Every container under ``root`` with a readable config (``names``: only those, when given)."""
    found = []
    for cid in listdir(root):
        if _ID.fullmatch(cid) is None:
            continue
        directory = os.path.join(root, cid)
        meta = _config(os.path.join(directory, "config.v2.json"))
        if meta is None or (names and meta[0] not in names):
            continue
        inst = _instance(directory, cid, *meta)
        if inst is not None:
            found.append(inst)
    return found


def _instance(directory: str, cid: str, name: str, created: float | None) -> Instance | None:
    base = f"{cid}-json.log"
    rotated: list[tuple[int, str]] = []
    for n in listdir(directory):
        m = re.fullmatch(re.escape(base) + r"\.(\d+)(\.gz)?", n)
        if m is not None and readable(n):
            rotated.append((int(m.group(1)), n))
    current = os.path.join(directory, base)
    files = [os.path.join(directory, n) for _, n in sorted(rotated, reverse=True)]
    if os.path.isfile(current):
        files.append(current)
    if not files:
        return None
    started = created if created is not None else first_time(files[0])
    return Instance(
        name,
        current,
        tuple(files),
        started if started is not None else mtime(files[0]),
        0,
        (("container", name),),
    )


def _config(path: str) -> tuple[str, float | None] | None:
    """(name, created) from a container's config.v2.json; None (one warning) when unreadable."""
    try:
        with open(path, "rb") as f:
            doc = json.loads(f.read(_MAX_CONFIG))
    except (OSError, ValueError, RecursionError):
        log.warning("%s: unreadable container config; container skipped", printable(os.path.dirname(path)))
        return None
    name = doc.get("Name") if isinstance(doc, dict) else None
    if not isinstance(name, str) or not name.strip("/"):
        log.warning("%s: container config names no container; skipped", printable(os.path.dirname(path)))
        return None
    created = doc.get("Created")
    return name.strip("/"), _epoch(created) if isinstance(created, str) else None


def _epoch(raw: str) -> float | None:
    try:
        when = datetime.fromisoformat(raw)
    except ValueError:
        return None
    return when.timestamp() if when.tzinfo is not None else None
