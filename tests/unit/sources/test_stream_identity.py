"""A ``FileStream`` takes its file's identity from the filesystem: an inode, or a head hash.

So the one stream reads over a filesystem without inodes (SFTP) too, and its
checkpoint entry carries whichever identity the filesystem gave.
"""

from __future__ import annotations

import pytest

from acceptmon.sources.rotation import fingerprint
from acceptmon.sources.tail.entry import Entry
from acceptmon.sources.tail.fs import DevInode, HeadHash
from acceptmon.sources.tail.stream import FileStream
from tests.support.fakefs import FakeFS

LOG = "/logs/x.log"


def test_without_inodes_the_identity_is_the_head_hash_at_first_sight() -> None:
    fs = FakeFS()
    fs.write(LOG, b"first\n")
    s = FileStream(fs.open(LOG), LOG)
    fs.write(LOG, b"second\n")
    chunk, _ = s.read(100, "x", LOG)
    assert chunk is not None and chunk.lines == ("first", "second")
    first_sight = HeadHash.of(fingerprint(b"first\n"))
    assert s.file_id == first_sight and chunk.end is not None and chunk.end.identity == str(first_sight)
    s.committed, s.committed_lineno = s.emitted, s.lineno
    entry = Entry.from_json(s.entry().to_json())
    assert entry is not None and entry.identity == first_sight and entry.offset == 13
    assert entry.fingerprint == fingerprint(b"first\nsecond\n")
    s.close()


def test_a_copy_is_the_same_content_and_keeps_a_head_hash_but_not_an_inode() -> None:
    for inodes in (False, True):
        fs = FakeFS(inodes=inodes)
        fs.write(LOG, b"first\n")
        s = FileStream(fs.open(LOG), LOG)
        before = s.file_id
        fs.copytruncate(LOG, f"{LOG}.1")
        s.move_to(fs.open(f"{LOG}.1"))
        assert (s.file_id == before) is not inodes
        assert isinstance(s.file_id, DevInode if inodes else HeadHash)
        s.close()
        assert fs.open_handles == 0


def test_an_empty_file_has_no_identity_yet_without_inodes() -> None:
    fs = FakeFS()
    fs.create(LOG)
    h = fs.open(LOG)
    with pytest.raises(OSError):
        FileStream(h, LOG)
    h.close()
