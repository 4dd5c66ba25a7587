"""The one checkpoint entry both file sources write: how far a file was read, and how to find it.

A position alone is not enough after a restart: the file may have been
renamed or copied meanwhile, so an entry also carries the file's identity
(``DevInode`` locally, ``HeadHash`` over SFTP) and the fingerprint of its
first bytes. Local and SSH sources write the same entry inside a document
that carries the checkpoint's one version (``statefiles.CHECKPOINT_VERSION``);
this module is the only place either turns into JSON and back, and checks
both while decoding. The JSON keys are those both sources wrote before (SSH
documents then had no version: they read as the first version). An SSH
document has the local shape plus its ``url``; ``ssh_files_of`` reads the
older one-entry-per-path shape into it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from acceptmon.sources.tail.fs import FileId, HeadHash, parse_file_id
from acceptmon.statefiles import CHECKPOINT_VERSION
from acceptmon.statefiles.strict import WrongShape, as_int, as_str
from acceptmon.text.printable import printable

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
    def decode(cls, raw: Any, where: str = "entry") -> Entry:
        """The entry, every value checked (``WrongShape`` naming the first wrong one)."""
        d = _obj(raw, where)
        identity = parse_file_id(as_str(_get(d, "identity", where), f"{where}.identity"))
        if identity is None:
            raise WrongShape(f"{where}.identity", "not a file identity")
        return cls(
            identity,
            as_int(_get(d, "offset", where), f"{where}.offset", low=0),
            as_int(_get(d, "lineno", where), f"{where}.lineno", low=1),
            as_str(_get(d, "fingerprint", where), f"{where}.fingerprint"),
            as_int(_get(d, "fp_len", where), f"{where}.fp_len", low=0),
            as_str(_get(d, "real", where), f"{where}.real"),
            as_int(d.get("mtime_ns", 0), f"{where}.mtime_ns", low=0),
            _marks(d.get("marks") or [], f"{where}.marks"),
        )

    @classmethod
    def from_json(cls, raw: Any) -> Entry | None:
        """The entry, or None if it is malformed (never fatal: that file is then started afresh)."""
        try:
            return cls.decode(raw)
        except WrongShape:
            return None


def files_of(state: dict[str, Any], *, unversioned_ok: bool = False) -> dict[str, Any] | None:
    """The per-path part of a file source's checkpoint this version reads, else None.

    ``unversioned_ok``: SSH checkpoints were written without a version; they are version 1.
    """
    version = state.get("version", CHECKPOINT_VERSION if unversioned_ok else None)
    files = state.get("files")
    return files if version == CHECKPOINT_VERSION and isinstance(files, dict) else None


def ssh_files_of(state: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """An SSH checkpoint's per-path states in the one shape (``{done, streams}``), whatever wrote it.

    Up to 562a699 an SSH document held one entry per path, and under ``known`` the heads
    of rotated files that were history. Both map without loss: the entry is the path's
    one stream, each head a done file known by its ``HeadHash``.
    """
    files = files_of(state, unversioned_ok=True) or {}
    out: dict[str, dict[str, Any]] = {}
    for path, f in files.items():
        if isinstance(f, dict) and "streams" in f:
            out[path] = {"done": f.get("done") or {}, "streams": f["streams"]}
        else:
            out[path] = {"done": {}, "streams": [f]}
    known = state.get("known")
    for path, heads in (known if isinstance(known, dict) else {}).items():
        if not isinstance(heads, list):
            continue
        part = out.setdefault(str(path), {"done": {}, "streams": []})
        done = dict(part["done"]) if isinstance(part["done"], dict) else {}
        for head in heads:
            if _is_head(head):
                done[str(HeadHash.of(head[0]))] = [head[0], head[1]]
        part["done"] = done
    return out


def _is_head(h: Any) -> bool:
    return isinstance(h, list) and len(h) == 2 and isinstance(h[0], str) and type(h[1]) is int and h[1] > 0


def check_document(raw: Any, where: str) -> None:
    """A file source's checkpoint document (local, or SSH with its ``url``), every entry decoded.

    The agent takes its checkpoint whole or not at all, so a wrong value here raises
    ``WrongShape`` rather than dropping one file's position (its lines would be counted twice).
    """
    d = _obj(raw, where)
    ssh = "url" in d
    if ssh:
        as_str(d["url"], f"{where}.url")
    version = d.get("version", CHECKPOINT_VERSION if ssh else None)
    if type(version) is not int or version != CHECKPOINT_VERSION:
        raise WrongShape(f"{where}.version", f"not {CHECKPOINT_VERSION}")
    for path, f in _obj(_get(d, "files", where), f"{where}.files").items():
        at = f"{where}.files.{printable(path)}"
        if ssh and not (isinstance(f, dict) and "streams" in f):
            Entry.decode(f, at)  # one entry per path, as SSH documents were up to 562a699
            continue
        fd = _obj(f, at)
        for i, e in enumerate(_list(_get(fd, "streams", at), f"{at}.streams")):
            Entry.decode(e, f"{at}.streams[{i}]")
        for k, v in _obj(fd.get("done") or {}, f"{at}.done").items():
            pair = _list(v, f"{at}.done.{printable(k)}")
            if len(pair) != 2:
                raise WrongShape(f"{at}.done.{printable(k)}", "not a [fingerprint, length] pair")
            as_str(pair[0], f"{at}.done[0]")
            as_int(pair[1], f"{at}.done[1]", low=0)


def _marks(raw: Any, where: str) -> Marks:
    marks = []
    for i, mark in enumerate(_list(raw, where)):
        pair = _list(mark, f"{where}[{i}]")
        if len(pair) != 2:
            raise WrongShape(f"{where}[{i}]", "not a [length, fingerprint] pair")
        marks.append((as_int(pair[0], f"{where}[{i}][0]", low=1), as_str(pair[1], f"{where}[{i}][1]")))
    return tuple(marks)


def _obj(raw: Any, where: str) -> dict[str, Any]:
    if not isinstance(raw, dict) or not all(isinstance(k, str) for k in raw):
        raise WrongShape(where, "not an object")
    return raw


def _list(raw: Any, where: str) -> list[Any]:
    if not isinstance(raw, list):
        raise WrongShape(where, "not a list")
    return raw


def _get(d: dict[str, Any], key: str, where: str) -> Any:
    if key not in d:
        raise WrongShape(where, f"missing {key}")
    return d[key]
