"""The one checkpoint entry both file sources write: how far a file was read, and how to find it.

A position alone is not enough after a restart: the file may have been
renamed or copied meanwhile, so an entry also carries the file's identity
(``DevInode`` locally, ``HeadHash`` over SFTP) and the fingerprint of its
first bytes. Local and SSH sources write the same entry inside a document
that carries ``CHECKPOINT_VERSION``; this module is the only place either
turns into JSON and back. The JSON keys are those both sources wrote before
(SSH documents then had no version: they read as version 1).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from acceptmon.sources.tail.fs import FileId, parse_file_id

#: The layout of a file source's checkpoint document and of its entries.
CHECKPOINT_VERSION = 1

#: (length, fingerprint) of each whole-line prefix of a file's first bytes: a copy
#: that copytruncate cut short of the fingerprint is still known by one of them.
Marks = tuple[tuple[int, str], ...]


@dataclass(frozen=True, slots=True)
class Entry:
    """Committed position in one file plus what finds that file again."""

    identity: FileId
    offset: int
    lineno: int
    fingerprint: str
    fp_len: int
    #: The path the file's content was written as (its rotations are named after it).
    real: str
    mtime_ns: int = 0
    marks: Marks = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "identity": str(self.identity),
            "offset": self.offset,
            "lineno": self.lineno,
            "fingerprint": self.fingerprint,
            "fp_len": self.fp_len,
            "real": self.real,
        }
        if self.mtime_ns:
            out["mtime_ns"] = self.mtime_ns
        if self.marks:
            out["marks"] = [list(m) for m in self.marks]
        return out

    @classmethod
    def from_json(cls, raw: Any) -> Entry | None:
        """The entry, or None if it is malformed (never fatal: that file is then started afresh)."""
        try:
            identity = parse_file_id(_str(raw["identity"]))
            if identity is None:
                return None
            marks = raw.get("marks") or []
            e = cls(
                identity,
                _int(raw["offset"]),
                _int(raw["lineno"]),
                _str(raw["fingerprint"]),
                _int(raw["fp_len"]),
                _str(raw["real"]),
                _int(raw.get("mtime_ns", 0)),
                tuple((_int(n), _str(h)) for n, h in marks),
            )
        except (KeyError, TypeError, ValueError, AttributeError):
            return None
        if e.offset < 0 or e.lineno < 1 or e.fp_len < 0 or e.mtime_ns < 0:
            return None
        return e


def files_of(state: dict[str, Any], *, unversioned_ok: bool = False) -> dict[str, Any] | None:
    """The per-path part of a file source's checkpoint this version reads, else None.

    ``unversioned_ok``: SSH checkpoints were written without a version; they are version 1.
    """
    version = state.get("version", CHECKPOINT_VERSION if unversioned_ok else None)
    files = state.get("files")
    return files if version == CHECKPOINT_VERSION and isinstance(files, dict) else None


def _int(v: Any) -> int:
    if type(v) is not int:
        raise TypeError("not an integer")
    return v


def _str(v: Any) -> str:
    if not isinstance(v, str):
        raise TypeError("not a string")
    return v
