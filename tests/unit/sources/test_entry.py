"""The one checkpoint entry (tail/entry.py) and file identity (tail/fs.py): old checkpoints still restore."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from acceptmon.clock import ManualClock
from acceptmon.sources.local import LocalSource
from acceptmon.sources.rotation import fingerprint
from acceptmon.sources.ssh import SSHSource
from acceptmon.sources.ssh.options import SSHSettings
from acceptmon.sources.tail.entry import Entry, check_document, files_of, ssh_files_of
from acceptmon.sources.tail.fs import DevInode, HeadHash, parse_file_id
from acceptmon.statefiles import CHECKPOINT_VERSION
from acceptmon.statefiles.strict import WrongShape
from tests.support.fakefs import FakeFS
from tests.unit.sources.ssh.test_source import FakePool

#: Entries exactly as the local and SSH sources wrote them before there was one type.
OLD_LOCAL = {
    "identity": "2049:1234",
    "offset": 10,
    "lineno": 3,
    "fingerprint": "ab" * 16,
    "fp_len": 10,
    "marks": [],
    "real": "/var/log/x.log",
    "mtime_ns": 1_700_000_000_000_000_000,
}
OLD_SSH = {
    "identity": "sftp:0123456789abcdef",
    "offset": 4,
    "lineno": 2,
    "fingerprint": "0123456789abcdef" * 2,
    "fp_len": 4,
    "real": "/var/log/app.log",
}


def test_identities_keep_their_string_forms() -> None:
    assert str(DevInode(2049, 1234)) == "2049:1234"
    assert str(HeadHash.of("0123456789abcdef" * 2)) == "sftp:0123456789abcdef"
    for text in ("2049:1234", "sftp:0123456789abcdef"):
        assert str(parse_file_id(text)) == text
    for junk in ("", "sftp:", "sftp:XYZ", "a:b", "12", "x:1"):
        assert parse_file_id(junk) is None


@pytest.mark.parametrize("raw", [OLD_LOCAL, OLD_SSH], ids=["local", "ssh"])
def test_old_entries_parse_and_write_back_the_same_keys(raw: dict[str, Any]) -> None:
    e = Entry.from_json(raw)
    assert e is not None
    assert (str(e.identity), e.offset, e.lineno, e.fingerprint, e.fp_len, e.real) == (
        raw["identity"],
        raw["offset"],
        raw["lineno"],
        raw["fingerprint"],
        raw["fp_len"],
        raw["real"],
    )
    assert e.to_json() == {k: v for k, v in raw.items() if v != []}
    assert Entry.from_json(e.to_json()) == e


def test_identity_kind_is_typed() -> None:
    local, ssh = Entry.from_json(OLD_LOCAL), Entry.from_json(OLD_SSH)
    assert local is not None and local.identity == DevInode(2049, 1234)
    assert ssh is not None and ssh.identity == HeadHash("0123456789abcdef")


@pytest.mark.parametrize(
    "change",
    [
        {"identity": "not an identity"},
        {"offset": -1},
        {"offset": 1.5},
        {"lineno": 0},
        {"fp_len": "4"},
        {"marks": [[1]]},
        {"real": None},
    ],
)
def test_malformed_entries_are_dropped_not_fatal(change: dict[str, Any]) -> None:
    assert Entry.from_json(OLD_LOCAL | change) is None
    assert Entry.from_json({k: v for k, v in OLD_SSH.items() if k != "fingerprint"}) is None


def test_documents_of_another_version_are_not_read() -> None:
    assert files_of({"version": CHECKPOINT_VERSION, "files": {}}) == {}
    assert files_of({"version": CHECKPOINT_VERSION + 1, "files": {}}) is None
    assert files_of({"files": {}}) is None
    assert files_of({"files": {}}, unversioned_ok=True) == {}


def test_ssh_source_resumes_from_an_old_unversioned_checkpoint() -> None:
    fs = FakeFS()
    fs.append("/var/log/app.log", "a", "b", "c")
    entry = OLD_SSH | {"fingerprint": fingerprint(b"a\nb\n")}  # read up to "c", as it was written
    old = {"url": "ssh://gpu1/var/log/app.log", "files": {"/var/log/app.log": entry}}
    settings = SSHSettings(ssh_config=None)
    src = SSHSource("gpu1", "ssh://gpu1/var/log/app.log", settings, pool=FakePool(), clock=ManualClock())  # type: ignore[arg-type]
    src.restore(old)
    for _ in range(5):
        src.work(fs, lambda: True)
    chunks = src.poll()
    assert [line for c in chunks for line in c.lines] == ["c"]
    for c in chunks:
        src.commit(c)
    state = src.checkpoint()
    assert state["version"] == CHECKPOINT_VERSION
    assert state["files"]["/var/log/app.log"]["streams"][0]["offset"] == 6


def test_local_source_resumes_from_an_old_shape_checkpoint(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_bytes(b"one\ntwo\n")
    st = os.stat(log)
    entry = OLD_LOCAL | {
        "identity": f"{st.st_dev}:{st.st_ino}",
        "offset": 4,
        "lineno": 2,
        "fingerprint": fingerprint(b"one\ntwo\n"),
        "fp_len": 8,
        "real": str(log),
        "mtime_ns": st.st_mtime_ns,
    }
    old = {"version": 1, "files": {str(log): {"streams": [entry], "done": {}}}}
    src = LocalSource("x", str(log), clock=ManualClock())
    src.restore(old)
    chunks = src.poll()
    assert [line for c in chunks for line in c.lines] == ["two"]
    for c in chunks:
        src.commit(c)
    (saved,) = src.checkpoint()["files"][str(log)]["streams"]
    assert saved["identity"] == entry["identity"] and saved["offset"] == 8
    src.close()


def test_an_ssh_document_may_have_the_local_shape() -> None:
    entry = {"identity": "sftp:00112233445566ff", "offset": 2, "lineno": 2, "fingerprint": "ab", "fp_len": 2}
    doc = {"url": "ssh://h/x", "version": CHECKPOINT_VERSION, "files": {"/x": {"done": {}, "streams": []}}}
    check_document(doc, "s")
    doc["files"] = {"/x": {"done": {}, "streams": [entry | {"real": "/x"}]}}
    check_document(doc, "s")
    doc["files"] = {"/x": {"done": {}, "streams": [entry]}}  # no "real"
    with pytest.raises(WrongShape):
        check_document(doc, "s")


def test_old_ssh_known_heads_become_done_files() -> None:
    state = {"url": "ssh://h/x", "files": {}, "known": {"/x": [["ab" * 16, 7], ["bad", 0]]}}
    assert ssh_files_of(state) == {"/x": {"done": {"sftp:" + "ab" * 8: ["ab" * 16, 7]}, "streams": []}}
