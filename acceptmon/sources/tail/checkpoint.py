"""The one checkpoint entry both file sources write: where a file was read to, and how to find it.

A position alone is not enough after a restart: the file may have been
renamed or copied meanwhile, so an entry also carries the file's identity and
the fingerprint of its first bytes. Local and SSH sources write the same entry
(``identity`` is a ``DevInode`` or a ``HeadHash``) inside the same versioned
document; this module is the only place that turns either into JSON and back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from acceptmon.sources.tail.fs import FileId, parse_file_id

#: The version of a file source's checkpoint document (its entries and their layout).
CHECKPOINT_VERSION = 1


@dataclass(frozen=True, slots=True)
class Entry:
    """Committed position in one file plus what finds that file again."""

    identity: FileId
    offset: int
    lineno: int
    fingerprint: str
    fp_len: int
    real: str
    mtime_ns: int = 0

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
        return out

    @classmethod
    def from_json(cls, raw: Any) -> Entry | None:
        """The entry, or None if it is malformed (never fatal)."""
        try:
            identity = parse_file_id(_str(raw["identity"]))
            if identity is None:
                return None
            e = cls(
                identity,
                _int(raw["offset"]),
                _int(raw["lineno"]),
                _str(raw["fingerprint"]),
                _int(raw["fp_len"]),
                _str(raw["real"]),
                _int(raw.get("mtime_ns", 0)),
            )
        except (KeyError, TypeError, ValueError, AttributeError):
            return None
        if e.offset < 0 or e.lineno < 1 or e.fp_len < 0 or e.mtime_ns < 0:
            return None
        return e


def document(files: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """A file source's checkpoint: its per-path state under the current version."""
    return {**extra, "version": CHECKPOINT_VERSION, "files": files}


def files_of(state: dict[str, Any], *, unversioned_ok: bool = False) -> dict[str, Any] | None:
    """The per-path state of a checkpoint this version can read, else None.

    ``unversioned_ok``: SSH checkpoints were written without a version before
    there was a second one; they are version 1.
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
