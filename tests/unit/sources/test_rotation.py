from __future__ import annotations

import pytest

from acceptmon.sources.rotation import FileState, classify, fingerprint, is_compressed, is_rotated_name

FP_A, FP_B = fingerprint(b"a" * 10), fingerprint(b"b" * 10)
BEFORE = FileState("1:1", 100, FP_A, 10)


@pytest.mark.parametrize(
    ("now", "offset", "want"),
    [
        (None, 100, "gone"),
        (FileState("1:2", 100, FP_B, 10), 100, "rotated"),
        (FileState("1:1", 10, FP_A, 10), 100, "truncated"),
        (FileState("1:1", 90, FP_A, 10), 50, "truncated"),  # shrank below what we saw, not below offset
        (FileState("1:1", 500, FP_B, 10), 100, "replaced"),  # copytruncate, regrown before we looked
        (FileState("1:1", 150, FP_A, 10), 100, "grown"),
        (FileState("1:1", 100, FP_A, 10), 100, "unchanged"),
        (FileState("1:1", 150, FP_B, 20), 100, "grown"),  # fingerprints over other lengths: not compared
    ],
)
def test_classify(now: FileState | None, offset: int, want: str) -> None:
    assert classify(BEFORE, now, offset) == want


def test_without_identity_a_new_fingerprint_means_rotated() -> None:
    before = FileState("", 100, FP_A, 10)
    assert classify(before, FileState("", 200, FP_B, 10), 100) == "rotated"


@pytest.mark.parametrize(
    ("name", "want"),
    [
        ("x.log.1", True),
        ("x.log-20261201", True),
        ("x.log.2026-12-01", True),
        ("x.log_3", True),
        ("x.log.1.gz", False),
        ("x.log.2.xz", False),
        ("x.log-20261201.bz2", False),
        ("x.log.3.zst", False),
        ("x.log", False),
        ("x.logger", False),
        ("x.log.old", False),
        ("y.log.1", False),
    ],
)
def test_rotated_names(name: str, want: bool) -> None:
    assert is_rotated_name("x.log", name) is want


def test_compressed_suffixes() -> None:
    assert all(is_compressed(f"a.log.1{s}") for s in (".gz", ".xz", ".bz2", ".zst", ".GZ"))
    assert not is_compressed("a.log.1")


def test_fingerprint_depends_on_every_byte() -> None:
    assert fingerprint(b"abc") != fingerprint(b"abd") and fingerprint(b"abc") == fingerprint(b"abc")
