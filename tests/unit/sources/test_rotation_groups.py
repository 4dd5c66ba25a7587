"""The one rotation rule and the one decompression table, as the SOURCE grammar uses them."""

from __future__ import annotations

import bz2
import gzip
import io
import logging
import lzma
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from acceptmon.sources.files import expand
from acceptmon.sources.rotation import decompressed, group_rotations, open_local, readable, rotation_base
from acceptmon.sources.stdin import StreamSource


def test_rotations_join_their_log_oldest_first_and_the_log_last() -> None:
    age = {"x.log.1": 3.0, "x.log.2.gz": 2.0, "x.log-20261201.bz2": 1.0, "x.log": 9.0, "y.log": 0.0}
    groups = group_rotations(sorted(age), age.__getitem__)
    assert groups == [
        ("x.log", ("x.log-20261201.bz2", "x.log.2.gz", "x.log.1", "x.log")),
        ("y.log", ("y.log",)),
    ]


def test_rotation_check_is_by_prefix() -> None:
    names = {"server.log", "server.log.1", "other.log", "server.log-20261201"}
    assert rotation_base("server.log.1", names) == "server.log"
    assert rotation_base("server.log-20261201", names) == "server.log"
    assert rotation_base("server.log", names) is None
    assert rotation_base("other.log", names) is None


def test_a_rotation_of_a_rotation_belongs_to_the_log() -> None:
    assert rotation_base("x.log.1.1", {"x.log", "x.log.1"}) == "x.log"
    assert rotation_base("x.log.1", {"x.log.1"}) is None
    assert group_rotations(["x.log", "x.log.1", "x.log.1.1"], lambda _p: 0.0) == [
        ("x.log", ("x.log.1", "x.log.1.1", "x.log"))
    ]


def test_files_without_their_log_are_logs_of_their_own() -> None:
    assert group_rotations(["x.log.1", "x.gz"], lambda _p: 0.0) == [
        ("x.gz", ("x.gz",)),
        ("x.log.1", ("x.log.1",)),
    ]
    assert rotation_base("x.gz.1", {"x.gz"}) is None  # a compressed file is no log to rotate


def test_a_rotation_joins_the_log_in_its_own_directory(tmp_path: Path) -> None:
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "server.log").write_text(f"{d}\n")
        (tmp_path / d / "server.log.1").write_text(f"{d} older\n")
    logs = expand(str(tmp_path / "*" / "server.log*"))
    assert [(lg.name, lg.files) for lg in logs] == [
        (
            str(tmp_path / d / "server.log"),
            (str(tmp_path / d / "server.log.1"), str(tmp_path / d / "server.log")),
        )
        for d in ("a", "b")
    ]


@pytest.mark.parametrize(
    ("suffix", "compress"),
    [
        (".gz", gzip.compress),
        (".bz2", bz2.compress),
        (".xz", lzma.compress),
        (".lzma", lambda b: lzma.compress(b, lzma.FORMAT_ALONE)),
    ],
)
def test_the_table_reads_each_codec_locally(
    tmp_path: Path, suffix: str, compress: Callable[[bytes], bytes]
) -> None:
    path = tmp_path / f"x.log.1{suffix.upper() if suffix == '.gz' else suffix}"
    path.write_bytes(compress(b"one\ntwo\n"))
    with open_local(str(path)) as stream:
        assert stream.read() == b"one\ntwo\n"


def test_a_format_outside_the_table_is_skipped_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "x.log").write_text("now\n")
    (tmp_path / "x.log.1.zst").write_bytes(b"(\xb5/\xfd")
    assert not readable("x.log.1.zst") and readable("x.log.1.gz") and readable("x.log")
    with caplog.at_level(logging.WARNING):
        logs = expand(str(tmp_path / "x.log*"))
    assert [lg.files for lg in logs] == [(str(tmp_path / "x.log"),)]
    assert "x.log.1.zst: cannot decompress this format; skipped" in caplog.text


def test_an_uncompressed_name_passes_through() -> None:
    raw = io.BytesIO(b"plain\n")
    with decompressed(raw, "server.log") as stream:
        assert stream is raw


def test_standard_input_waited_on_is_read_to_its_end() -> None:
    read, write = os.pipe()
    os.write(write, b"a\nb\nlast")
    os.close(write)
    with os.fdopen(read, "rb") as f:
        src = StreamSource("-", f, wait=True)
        lines: list[str] = []
        while not src.ended:
            lines += [line for chunk in src.poll() for line in chunk.lines]
        src.close()
        assert lines == ["a", "b", "last"]
        assert os.get_blocking(read)
