"""Which files a glob names now: regular, uncompressed, and not a rotation of another match."""

from __future__ import annotations

import glob
import os
import stat

from acceptmon.clock import Clock
from acceptmon.sources.rotation import is_compressed, rotation_base


def static_directory(pattern: str) -> str:
    """The longest leading directory of ``pattern`` without wildcards."""
    parts = os.path.dirname(pattern).split(os.sep)
    keep: list[str] = []
    for part in parts:
        if glob.has_magic(part):
            break
        keep.append(part)
    return os.sep.join(keep) or (os.sep if pattern.startswith(os.sep) else ".")


class GlobMatcher:
    """Re-expands a glob only when its directory changed, or every ``interval`` seconds.

    Directory mtimes are coarse (a clock tick), so a change right after a scan
    can leave the mtime unchanged: the periodic rescan is the backstop.
    """

    def __init__(self, pattern: str, clock: Clock, interval: float) -> None:
        self.pattern = pattern
        self.directory = static_directory(pattern)
        self._clock = clock
        self.interval = interval
        self._signature: tuple[int, int] | None = None
        self._next = 0.0

    def _dir_signature(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self.directory)
        except OSError:
            return None
        return st.st_ino, st.st_mtime_ns

    def changed(self) -> bool:
        return self._dir_signature() != self._signature or self._clock.monotonic() >= self._next

    def match(self) -> list[str]:
        self._signature = self._dir_signature()
        self._next = self._clock.monotonic() + self.interval
        found = [p for p in glob.glob(self.pattern) if not is_compressed(p) and _is_file(p)]
        names = {os.path.basename(p) for p in found}
        return sorted(p for p in found if rotation_base(os.path.basename(p), names) is None)


def _is_file(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False
