"""``SourceSettings`` → a live ``Source``, and a file reader on the same host.

Imports are deferred so that a deployment without, say, SSH sources never
loads paramiko.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from acceptmon.clock import Clock
from acceptmon.settings.sources import SourceSettings
from acceptmon.sources.base import Source
from acceptmon.sources.events import FileEvents

#: Reads a file's bytes on the source's host; None when absent or unreadable.
HostReader = Callable[[str], "bytes | None"]


def build(cfg: SourceSettings, clock: Clock, events: FileEvents | None = None) -> Source:
    if cfg.kind == "file":
        from acceptmon.sources.local import LocalSource

        return LocalSource(
            cfg.name, cfg.path, from_beginning=cfg.read_from_beginning, clock=clock, events=events
        )
    if cfg.kind == "ssh":
        from acceptmon.runs.draft_config import candidates
        from acceptmon.sources.ssh import SSHSource

        hub = remote_hub(cfg)
        source: Source = SSHSource(
            cfg.name,
            cfg.path,
            cfg.ssh,
            clock=clock,
            draft_candidates=lambda path, snapshots: candidates(path, hub, snapshots),
        )
        return source
    if cfg.kind == "journald":
        from acceptmon.sources.journal import JournalSource

        return JournalSource(
            cfg.name, cfg.path.partition(":")[2], clock=clock, from_beginning=cfg.read_from_beginning
        )
    from acceptmon.sources.stdin import StreamSource

    return StreamSource(cfg.name, sys.stdin.buffer)


#: The HF hub cache on a remote host when the source names no ``hf_home``: relative to
#: the login's home directory, where SFTP paths start.
REMOTE_HUB = ".cache/huggingface/hub"


def remote_hub(cfg: SourceSettings) -> str:
    hf_home = cfg.option("hf_home")
    return f"{str(hf_home).rstrip('/')}/hub" if hf_home else REMOTE_HUB


def local_hub(cfg: SourceSettings | None) -> str | None:
    """A local source's ``hf_home``/hub, or None for this host's default."""
    hf_home = cfg.option("hf_home") if cfg is not None else None
    if not hf_home:
        return None
    from acceptmon.runs.draft_config import local_hub as hub

    return hub(str(hf_home))


def host_reader(cfg: SourceSettings, source: Source) -> HostReader:
    """Read files where the log lives: over the source's SSH connection, or locally."""
    if cfg.kind == "ssh":
        # Never blocks: the source's worker thread fetched these before the lines that need them.
        return source.remote_files.get  # type: ignore[attr-defined,no-any-return]
    from acceptmon.runs.draft_config import read_local

    return read_local
