"""Stage 1: bytes → Chunks of lines with positions; ``poll()`` never blocks.

Local files (``local``), remote files over SFTP (``ssh/``), journald, stdin, and
a node's container logs as workloads (``container/``).
Following one path across rotation, truncation and restarts lives in ``tail/``.
``open_source`` is the one factory of live sources (the agent's and ``runs --follow``'s).

Imports are deferred so that a deployment without, say, SSH sources never loads paramiko.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from acceptmon.clock import Clock
from acceptmon.sources.base import Source
from acceptmon.sources.events import FileEvents

if TYPE_CHECKING:
    from acceptmon.sources.ssh.fetch import RemoteSnapshots
    from acceptmon.sources.ssh.options import SSHSettings

#: Reads a file's bytes on the source's host; None when absent or unreadable.
HostReader = Callable[[str], "bytes | None"]
#: Where a draft model's config.json may be, most likely first: (draft model path, hub cache,
#: lists the cache's snapshots) → paths (``runs.draft_config.candidates``, which sits above).
DraftCandidates = Callable[[str, str, "RemoteSnapshots"], list[str]]

#: The HF hub cache on a remote host when the source names no ``hf_home``: relative to
#: the login's home directory, where SFTP paths start.
REMOTE_HUB = ".cache/huggingface/hub"


class SourceSpec(Protocol):
    """What a source is opened from (``settings.SourceSettings`` is one): a path or glob,
    ``-``, ``journald:UNIT`` or ``ssh://…``, and its per-source options."""

    @property
    def name(self) -> str: ...

    @property
    def path(self) -> str: ...

    @property
    def read_from_beginning(self) -> bool: ...

    @property
    def kind(self) -> str: ...

    @property
    def ssh(self) -> SSHSettings | None: ...

    def option(self, key: str, default: Any = None) -> Any: ...


def open_source(
    spec: SourceSpec,
    clock: Clock,
    events: FileEvents | None = None,
    draft_candidates: DraftCandidates | None = None,
) -> Source:
    """A live source for ``spec``. ``events`` (file events from a directory watcher) lets
    local files be polled slowly while quiet; ``draft_candidates`` has an SSH source fetch
    the draft config.json a start line names before it hands that line over."""
    if spec.kind == "file":
        from acceptmon.sources.local import LocalSource

        return LocalSource(
            spec.name, spec.path, from_beginning=spec.read_from_beginning, clock=clock, events=events
        )
    if spec.kind == "ssh":
        from acceptmon.sources.ssh import SSHSource

        hub = hub_of(spec) or REMOTE_HUB
        find = draft_candidates
        return SSHSource(
            spec.name,
            spec.path,
            _ssh_settings(spec),
            clock=clock,
            draft_candidates=None if find is None else lambda path, snapshots: find(path, hub, snapshots),
        )
    if spec.kind in ("kubernetes", "docker"):
        from acceptmon.sources.container.follow import HANDOVER_S, WorkloadSource
        from acceptmon.sources.container.kubelet import Filters

        filters = Filters.of(spec.option("namespaces"), spec.option("pod_prefix"), spec.option("containers"))
        return WorkloadSource(
            spec.name,
            spec.path,
            clock=clock,
            from_beginning=spec.read_from_beginning,
            filters=filters,
            events=events,
            handover_s=float(spec.option("handover_s", HANDOVER_S)),
        )
    if spec.kind == "journald":
        from acceptmon.sources.journal import JournalSource

        return JournalSource(
            spec.name, spec.path.partition(":")[2], clock=clock, from_beginning=spec.read_from_beginning
        )
    from acceptmon.sources.stdin import StreamSource

    return StreamSource(spec.name, sys.stdin.buffer)


def hub_of(spec: SourceSpec) -> str | None:
    """The Hugging Face hub cache where the source's log lives: its ``hf_home``'s hub; else,
    over SSH, the login's default, and locally None (this host's default then applies)."""
    hf_home = spec.option("hf_home")
    if spec.kind == "ssh":
        return f"{str(hf_home).rstrip('/')}/hub" if hf_home else REMOTE_HUB
    return os.path.join(os.path.expanduser(str(hf_home)), "hub") if hf_home else None


def _ssh_settings(spec: SourceSpec) -> SSHSettings:
    """The settings the loader parsed (and checked) for an ``ssh://`` source."""
    if spec.ssh is None:
        raise ValueError(f"{spec.name}: an ssh:// source without its SSH settings")
    return spec.ssh


def remote_reader(spec: SourceSpec, source: Source) -> HostReader | None:
    """Reads files on the host of an SSH source (over its connection; never blocks: its worker
    fetched them before the lines that need them); None for a source on this host."""
    if spec.kind != "ssh":
        return None
    from acceptmon.sources.ssh import SSHSource

    return source.remote_files.get if isinstance(source, SSHSource) else None
