"""Where a finding comes from: host, model, draft model and the user's per-source labels.

An alert has to say which machine and which model it is about without the
reader decoding a source name. ``SourceIdentity`` is what a source's config
(``host:``, ``labels:``) and its transport (the SSH host) say about it; the
run supplies the models.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: Prometheus label names (``__`` is reserved for Prometheus itself).
_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")

#: Labels acceptmon sets itself on its metrics, alerts and rules.
RESERVED = frozenset(
    {
        "source",
        "host",
        "engine",
        "rule",
        "severity",
        "run_id",
        "model",
        "draft_model",
        "algorithm",
        "config_hash",
        "num_steps",
        "eagle_topk",
        "num_draft_tokens",
        "le",
        "quantile",
        "job",
        "instance",
        "alertname",
        "kind",
        "reason",
        "state",
        "channel",
        "version",
    }
)

MAX_LABELS = 16
MAX_VALUE = 200


def label_problems(raw: Any) -> list[str]:
    """Why ``raw`` is not a usable ``labels:`` mapping (empty when it is)."""
    if not isinstance(raw, Mapping):
        return [f"expected a mapping of label name to string value, got {type(raw).__name__}"]
    problems: list[str] = []
    if len(raw) > MAX_LABELS:
        problems.append(f"at most {MAX_LABELS} labels, got {len(raw)}")
    for name, value in raw.items():
        if not isinstance(name, str) or not _NAME.fullmatch(name) or name.startswith("__"):
            problems.append(
                f"{name!r} is not a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*, no '__' prefix)"
            )
        elif name in RESERVED:
            problems.append(f"{name!r} is reserved (acceptmon sets it itself)")
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            problems.append(f"{name!s}: expected a string value, got {type(value).__name__}")
        elif len(str(value)) > MAX_VALUE:
            problems.append(f"{name!s}: value longer than {MAX_VALUE} characters")
    return problems


def name_bytes(name: str) -> bytes:
    """A name's bytes for hashing it into a file name: never fails, different names differ."""
    return name.encode("utf-8", "surrogatepass")


def agent_host() -> str:
    """This machine's name, as alerts show it for local sources."""
    return socket.gethostname() or "localhost"


def ssh_host(path: str) -> str:
    """``ssh://user@gpu-7:2222/var/log/x`` → ``gpu-7`` (no user, no port)."""
    rest = path[len("ssh://") :] if path.startswith("ssh://") else path
    hostport = rest.split("/", 1)[0].rpartition("@")[2]
    if hostport.startswith("["):
        return hostport[1:].split("]", 1)[0]
    return hostport.rsplit(":", 1)[0] if hostport.count(":") == 1 else hostport


@dataclass(frozen=True, slots=True)
class SourceIdentity:
    """What alerts say about a source besides its name."""

    host: str = ""
    labels: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(
        cls, path: str, host: str | None = None, labels: Mapping[str, Any] | None = None
    ) -> SourceIdentity:
        """From a source's path and its ``host:`` / ``labels:`` keys (already validated)."""
        if not host:
            host = ssh_host(path) if path.startswith("ssh://") else agent_host()
        pairs = tuple(sorted((str(k), str(v)) for k, v in (labels or {}).items()))
        return cls(host, pairs)
