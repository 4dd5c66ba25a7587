"""Webhook URLs are credentials: anyone holding one can post to the channel.

``Secret`` keeps the value out of reprs, f-strings and logs by accident;
``scrub`` removes it (and any URL at all) from text that came from a library
we do not control, such as an exception message from ``http.client``.
"""

from __future__ import annotations

import re
from typing import NoReturn
from urllib.parse import urlsplit

REDACTED = "<redacted>"

# Anything URL-shaped: scheme://... up to whitespace or a quote/bracket.
_URL_RE = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"<>]+")


class Secret:
    """A string that prints as ``<redacted>`` everywhere except ``reveal()``."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        """The raw value; call only at the point of use (the HTTP request)."""
        return self._value

    def __repr__(self) -> str:
        return f"Secret({REDACTED!r})"

    def __str__(self) -> str:
        return REDACTED

    def __reduce__(self) -> NoReturn:
        raise TypeError("Secret values are not picklable")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)

    def fragments(self) -> list[str]:
        """Every form in which a library might quote the value, longest first.

        Libraries quote the whole URL, only its path, or its repr (with control
        characters escaped); the last path segment and the query are where
        webhook tokens live, so those go too.
        """
        try:
            parts = urlsplit(self._value)
            pieces = [parts.path, parts.query, parts.path.rsplit("/", 1)[-1]]
        except ValueError:
            pieces = []
        forms = {self._value, *(p for p in pieces if len(p) >= 8)}
        forms |= {repr(f)[1:-1] for f in forms}
        return sorted(forms, key=len, reverse=True)

    def scrub(self, text: str) -> str:
        """``text`` without this secret, its URL path, or any other URL."""
        return scrub(text, self)


def scrub(text: str, *secrets: Secret) -> str:
    """Remove every URL and every fragment of ``secrets`` from ``text``."""
    for secret in secrets:
        for fragment in secret.fragments():
            text = text.replace(fragment, REDACTED)
    return _URL_RE.sub(REDACTED, text)
