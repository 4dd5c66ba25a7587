"""How a settings problem names a key or a value: a "did you mean" hint, bounded, never a secret.

A typo such as ``pol_interval`` silently ignored is worse than a refusal, and
a refusal that names the likely intended key is fixed in one edit. Every key or
value a problem echoes goes through ``shown``, so the rule that a pasted token
or webhook URL never reaches ``check-config``, a log or a ticket holds in one place.
"""

from __future__ import annotations

import difflib
import reprlib
from collections.abc import Collection, Iterable
from urllib.parse import urlsplit

from acceptmon.text.redact import redact_text

#: What a problem says instead of a value that looks like a secret.
NOT_SHOWN = "<not shown: it looks like a secret>"


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
    """A bounded repr for messages (YAML aliases can make a tiny file a huge value), or
    ``NOT_SHOWN`` when the value looks like a secret (checked on the whole value, not the cut)."""
    if looks_secret(value):
        return NOT_SHOWN
    text = _SHORT.repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def named(key: object) -> str:
    """A key as problems write it in a dotted path (``detect.min_dorp``), unquoted."""
    return NOT_SHOWN if looks_secret(key) else str(key)[:120]


def looks_secret(value: object) -> bool:
    """Whether a value (or a string inside it) is a credential ``redact`` knows, or an
    http(s) URL with a path or query: webhook URLs carry their secret in the path. Reads
    at most 256 strings, so an alias bomb costs no more than a short list."""
    return any(_secret_text(text) for text in _strings(value, [256]))


def _strings(value: object, budget: list[int]) -> Iterable[str]:
    if budget[0] <= 0:
        return
    budget[0] -= 1
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(k, budget)
            yield from _strings(v, budget)
            if budget[0] <= 0:
                return
    elif isinstance(value, list | tuple | set | frozenset):
        for v in value:
            yield from _strings(v, budget)
            if budget[0] <= 0:
                return


def _secret_text(text: str) -> bool:
    text = text[:4096]
    if redact_text(text) != text:
        return True
    lowered = text.lower()
    for scheme in ("https://", "http://"):
        at = lowered.find(scheme)
        if at >= 0:
            try:
                parts = urlsplit(text[at:].split()[0])
            except ValueError:
                return True
            if parts.path.strip("/") or parts.query or parts.username:
                return True
    return False
