"""The typed file identity, the one checkpoint entry, and the local filesystem's handles."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from acceptmon.sources.tail.checkpoint import CHECKPOINT_VERSION, Entry, document, files_of
from acceptmon.sources.tail.fs import DevInode, HeadHash, parse_file_id
from acceptmon.sources.tail.localfs import LocalFS


@pytest.mark.parametrize("fid", [DevInode(2049, 131), HeadHash.of("0123456789abcdef" * 2)])
def test_identity_round_trips_through_its_checkpoint_string(fid: DevInode | HeadHash) -> None:
    assert parse_file_id(str(fid)) == fid


@pytest.mark.parametrize("text", ["", "12", "a:b", "1:", "sftp:", "sftp:XYZ", "3:4:5"])
def test_what_is_not_an_identity_is_refused(text: str) -> None:
    assert parse_file_id(text) is None


def test_entry_round_trips_and_keeps_the_keys_old_checkpoints_have() -> None:
    e = Entry(DevInode(1, 2), 40, 5, "ab" * 16, 40, "/var/log/x.log", 7)
    raw = e.to_json()
    assert raw == {
        "identity": "1:2",
        "offset": 40,
        "lineno": 5,
        "fingerprint": "ab" * 16,
        "fp_len": 40,
        "real": "/var/log/x.log",
        "mtime_ns": 7,
    }
    assert Entry.from_json(raw) == e


@pytest.mark.parametrize(
    "change",
    [
        {"identity": "nonsense"},
        {"identity": 3},
        {"offset": -1},
        {"offset": "4"},
        {"lineno": 0},
        {"fp_len": 1.5},
        {"real": None},
    ],
)
def test_malformed_entry_is_none_never_an_exception(change: dict[str, object]) -> None:
    raw = Entry(HeadHash("00ff"), 1, 1, "", 0, "/x").to_json() | change
    assert Entry.from_json(raw) is None
    assert Entry.from_json("not a dict") is None


def test_document_is_versioned_and_ssh_documents_without_a_version_still_read() -> None:
    doc = document({"/x": {}}, url="ssh://h/x")
    assert doc["version"] == CHECKPOINT_VERSION and files_of(doc) == {"/x": {}}
    assert files_of({"files": {"/x": {}}}) is None
    assert files_of({"files": {"/x": {}}}, unversioned_ok=True) == {"/x": {}}
    assert files_of({"version": CHECKPOINT_VERSION + 1, "files": {}}, unversioned_ok=True) is None


def test_local_handle_keeps_its_file_across_rename_and_knows_its_inode(tmp_path: Path) -> None:
    fs, log = LocalFS(), tmp_path / "x.log"
    log.write_bytes(b"one\n")
    h = fs.open(str(log))
    try:
        st = fs.stat(str(log))
        os.rename(log, tmp_path / "x.log.1")
        log.write_bytes(b"two, longer\n")
        assert h.identity() == st.identity != fs.stat(str(log)).identity
        assert (h.size(), h.read_at(1, 10)) == (4, b"ne\n")
        assert sorted(e.name for e in fs.listdir(str(tmp_path))) == ["x.log", "x.log.1"]
    finally:
        h.close()
