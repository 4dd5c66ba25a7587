"""The state directory is private: ours, 0700, its files 0600 (they hold positions, configs, outboxes).

The agent may run as root, so nothing in the directory is trusted to be what
it seems: a directory owned by another user is refused (``UnsafeStateDir``,
start-up exit code 4), and a symlink where a state file or subdirectory
belongs is never followed (files are opened with ``O_NOFOLLOW``; writes
rename a fresh file over the name, replacing a link, never writing through
it). Each refused symlink is logged once and counted
(``acceptmon_state_symlinks_refused_total``).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import stat
import tempfile
import threading
from pathlib import Path

log = logging.getLogger("acceptmon.agent")

#: The layout of the agent's checkpoint, the one version every part of it is written and read
#: under (each stage's part carries it too, as it always has: the JSON shape is unchanged).
CHECKPOINT_VERSION = 1


class UnsafeStateDir(OSError):
    """A state directory (or one inside it) that is not ours, or a symlink where it belongs."""


class _Refusals:
    """Symlinks refused since start: a count for /metrics, each path logged once."""

    def __init__(self) -> None:
        self.count = 0
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def note(self, path: Path | str) -> None:
        with self._lock:
            self.count += 1
            first = str(path) not in self._seen
            self._seen.add(str(path))
        if first:
            log.error("%s is a symlink in the state directory; not following it", path)


SYMLINKS = _Refusals()


def ensure_private_dir(directory: str | os.PathLike[str]) -> None:
    """Create ``directory`` 0700, or tighten it (logged once, here) if others may read it.

    ``UnsafeStateDir`` if it is owned by another user than the agent's: chmod-ing
    it would leave its owner free to plant files and links in it.
    """
    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    _own(path, os.stat(path))


def private_subdir(parent: str | os.PathLike[str], *names: str) -> Path:
    """``parent/names…``, each level created 0700 (or tightened) and refused if a symlink or not ours."""
    path = Path(parent)
    for name in names:
        path = path / name
        with contextlib.suppress(FileExistsError):
            os.mkdir(path, 0o700)
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            SYMLINKS.note(path)
            raise UnsafeStateDir(errno.ELOOP, "a symlink, not a directory; not following it", str(path))
        if not stat.S_ISDIR(st.st_mode):
            raise UnsafeStateDir(errno.ENOTDIR, "not a directory", str(path))
        _own(path, st)
    return path


def _own(path: Path, st: os.stat_result) -> None:
    uid = os.geteuid()
    if st.st_uid != uid:
        raise UnsafeStateDir(
            errno.EPERM,
            f"owned by uid {st.st_uid}, not by the agent's user (uid {uid}); "
            f"chown it to uid {uid} or choose another state_dir",
            str(path),
        )
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o077:
        os.chmod(path, mode & 0o700)
        log.warning("state directory %s had mode %04o; tightened to %04o", path, mode, mode & 0o700)


def read_private(path: Path | str) -> bytes:
    """The bytes of the state file ``path``, never through a symlink (``ELOOP``, logged once, counted)."""
    try:  # O_NONBLOCK: a FIFO planted there must not hang the open
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            SYMLINKS.note(path)
        raise
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        return f.read()


def is_real_dir(path: Path | str) -> bool:
    """Whether ``path`` is a directory itself, not a symlink to one (a symlink is logged and counted)."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    if stat.S_ISLNK(st.st_mode):
        SYMLINKS.note(path)
    return stat.S_ISDIR(st.st_mode)


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
