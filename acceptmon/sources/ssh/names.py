"""Glob matching for remote logs (pure).

A glob must not pick up a log's rotated siblings (``app.log.1``,
``app.log-20250601``) as logs of their own, or their lines would be read twice.
"""

from __future__ import annotations

import fnmatch

from acceptmon.sources.rotation import is_compressed, rotation_base


def glob_matches(pattern: str, names: list[str]) -> list[str]:
    """Names matching a file-name glob, minus compressed files and rotated siblings of other matches."""
    hits = sorted(n for n in names if fnmatch.fnmatchcase(n, pattern) and not is_compressed(n))
    present = set(hits)
    return [n for n in hits if rotation_base(n, present) is None]
