"""The state directory is private: 0700, its files 0600 (they hold positions, configs, outboxes)."""

from __future__ import annotations

import logging
import os
import stat
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


def write_private(path: Path, data: bytes) -> None:
    """Write ``path`` atomically as a 0600 file (a leftover temporary is replaced, not reused)."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
    os.replace(tmp, path)
