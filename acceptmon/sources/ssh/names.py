"""Glob matching for remote logs (pure).

A glob must not pick up rotated siblings (``app.log.1``, ``app.log-20250601``,
``rotation.is_rotated_name``) as logs of their own, or their lines would be
read twice.
"""

from __future__ import annotations

import fnmatch

from acceptmon.sources.rotation import is_compressed, is_rotated_name


def glob_matches(pattern: str, names: list[str]) -> list[str]:
    """Names matching a file-name glob, minus compressed files and rotated siblings of other matches."""
    hits = sorted(n for n in names if fnmatch.fnmatchcase(n, pattern) and not is_compressed(n))
    return [n for n in hits if not any(o != n and is_rotated_name(o, n) for o in hits)]
