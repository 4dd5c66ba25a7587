"""Unknown-key messages with a "did you mean" hint, shared by every settings section.

A typo such as ``pol_interval`` silently ignored is worse than a refusal, and
a refusal that names the likely intended key is fixed in one edit.
"""

from __future__ import annotations

import difflib
import reprlib
from collections.abc import Collection, Iterable


def did_you_mean(key: object, known: Collection[str]) -> str:
    """``"; did you mean 'x'?"`` for the closest known key, or ``""``."""
    close = difflib.get_close_matches(str(key), sorted(known), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def unknown_keys(keys: Iterable[object], known: Collection[str], where: str) -> list[str]:
    """One problem per key not in ``known`` (keys of any type: YAML allows ints and nulls)."""
    return [
        f"{where}: unknown key {shown(key)}{did_you_mean(key, known)}"
        for key in keys
        if not isinstance(key, str) or key not in known
    ]


_SHORT = reprlib.Repr()  # keyword arguments only from Python 3.12
_SHORT.maxlevel, _SHORT.maxlist, _SHORT.maxtuple, _SHORT.maxdict, _SHORT.maxset = 2, 4, 4, 4, 4
_SHORT.maxstring, _SHORT.maxother, _SHORT.maxlong = 60, 60, 40


def shown(value: object) -> str:
    """A bounded repr for messages: YAML aliases can make a tiny file a huge value."""
    text = _SHORT.repr(value)
    return text if len(text) <= 120 else text[:117] + "..."
