"""The state directory is private: 0700, its files 0600 (they hold positions, configs, outboxes)."""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import tempfile
from pathlib import Path

log = logging.getLogger("acceptmon.agent")


def ensure_private_dir(directory: str | os.PathLike[str]) -> None:
    """Create ``directory`` 0700, or tighten it (logged once, here) if others may read it."""
    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    mode = stat.S_IMODE(os.stat(path).st_mode)
    if mode & 0o077:
        os.chmod(path, mode & 0o700)
        log.warning("state directory %s had mode %04o; tightened to %04o", path, mode, mode & 0o700)


def write_private(path: Path | str, data: bytes) -> None:
    """Replace ``path`` atomically and durably with a 0600 file holding ``data``.

    The one write routine of the state directory: a unique temporary file
    (never a leftover one reused), fsync, rename over the old file, fsync the
    directory, so a crash or power loss leaves the old file or the new one,
    never a mix. A failed write removes its temporary file and raises OSError.
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", suffix=".tmp", dir=path.parent)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)


def remove_leftovers(directory: Path | str) -> None:
    """Delete temporary files of writes a crash interrupted (their targets are intact)."""
    for tmp in Path(directory).glob(".*.tmp"):
        tmp.unlink(missing_ok=True)


def fsync_dir(directory: Path | str) -> None:
    """Make a rename or unlink in ``directory`` survive power loss."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
