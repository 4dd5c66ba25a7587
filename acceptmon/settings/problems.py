"""The one list of settings problems: every section, every stage, one "where: what" each.

An operator fixing a file should not have to restart five times to find five
typos, so no parser stops at its first problem: each appends to the same list
and returns what it could read. The list is a plain ``list[str]`` to the stages'
own parsers (``detect``, ``notify``, ``sources.ssh``), which may not import
``settings/``; the helpers here are for the sections ``settings/`` parses itself.
Every value or key a problem echoes goes through ``text.suggest.shown`` (or
``named``), which never shows one that looks like a secret.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from acceptmon.text.suggest import shown, unknown_keys


class Problems(list[str]):
    """The problems found so far, in the order found."""

    def add(self, where: str, what: str) -> None:
        self.append(f"{where}: {what}")

    def unknown(self, keys: Iterable[object], known: Collection[str], where: str) -> None:
        """Keys not in ``known``, each with a did-you-mean when one is close."""
        self.extend(unknown_keys(keys, known, where))

    def seconds(self, raw: Mapping[str, Any], key: str, default: float, where: str = "") -> float:
        """A positive number of seconds under ``key`` (NaN, infinities and bools refused)."""
        value = raw.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 1e9:
            self.append(f"{where}{key}: expected a positive number of seconds, got {shown(value)}")
            return default
        return float(value)

    def flag(self, raw: Mapping[str, Any], key: str, default: bool, where: str = "") -> bool:
        """A YAML bool under ``key``: ``"yes"`` in quotes is a string, and refused."""
        value = raw.get(key, default)
        if not isinstance(value, bool):
            self.append(f"{where}{key}: expected true or false (a YAML bool), got {shown(value)}")
            return default
        return value

    def mapping(self, raw: Mapping[str, Any], key: str) -> Mapping[str, Any] | None:
        """The section under ``key`` if it is a mapping; None (and a problem) if it is not."""
        value = raw.get(key)
        if value is not None and not isinstance(value, Mapping):
            self.append(f"{key}: expected a mapping, got {type(value).__name__}")
        return value if isinstance(value, Mapping) else None
