"""A scout sorts a file's lines in another process: every reading command reads alike with it.

The scout (``ingest/scout.py``) is forced on here for files of any size, with chunks of
4 KiB so that each log is many chunks, and every command's output is compared with the
same command sorting every chunk itself. Each chunk must have taken the scout's answer
(else the comparison would prove nothing), and a chunk whose text is not what the scout
read, a scout that dies, and a file the scout was not given are sorted here.
"""

from __future__ import annotations

import gzip
import os
import threading
from array import array
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, timedelta, timezone, tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from acceptmon import children, cli
from acceptmon.ingest import bulk, scout
from acceptmon.parse.line import LineParser
from acceptmon.sources import chunks
from acceptmon.sources.chunks import read_chunks
from acceptmon.sources.lines import Lines
from bench.gen_log import generate
from tests.conftest import ROOT, SAMPLES

_COMMANDS = (
    ("oneshot", "--format", "prom"),
    ("oneshot", "--format", "findings"),
    ("oneshot", "--format", "jsonl"),
    ("runs", "--format", "json"),
)


def _logs() -> list[Path]:
    found = sorted(SAMPLES.glob("*.log"))
    found += sorted((ROOT / "tests" / "golden").glob("*/input.log"))
    found += sorted((ROOT / "tests" / "data").glob("*/*.log"))
    return found


class Spy:
    """Whether each chunk fed took the scout's answer (a part of a chunk, fed on its own after
    a request dump, cannot), and how many Decode rows came from it."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.fits: list[bool] = []
        self.rows = 0
        sort, given = scout.Presorted.sort, LineParser.bulk_given

        def spied_sort(ahead: scout.Presorted, chunk: bulk.Chunk, block: str) -> bulk.Sorted | None:
            found = sort(ahead, chunk, block)
            if ahead._message[1:3] == (chunk.lineno, len(chunk.lines)):  # not a part of it
                self.fits.append(ahead.used)
            return found

        def spied_given(
            parser: LineParser, found: tuple[str, list[list[str]]], n: int
        ) -> tuple[list[list[str]], object] | None:
            got = given(parser, found, n)
            self.rows += got is not None
            return got

        monkeypatch.setattr(scout.Presorted, "sort", spied_sort)
        monkeypatch.setattr(LineParser, "bulk_given", spied_given)


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> Iterator[Spy]:
    _scouting_always(monkeypatch)
    monkeypatch.setattr(chunks, "READ_SIZE", 4096)
    yield Spy(monkeypatch)


def _scouting_always(monkeypatch: pytest.MonkeyPatch) -> None:
    """A scout for any file, on one core too (the machine's cores decide speed, not results)."""
    monkeypatch.setattr(scout, "MIN_BYTES", 0)
    monkeypatch.setattr(children, "forkable", lambda: threading.active_count() == 1)
    monkeypatch.delenv("ACCEPTMON_SCOUT", raising=False)


def _plain(found: bulk.Sorted | None) -> object:
    """What a chunk's sorting says, flags as bools (a scout's come as bytes), without what
    only a scout adds (the rows it read, its Prefill check)."""
    if found is None:
        return None
    prefixes = found.prefixes.split("\n") if isinstance(found.prefixes, str) else found.prefixes
    flags = list(map(bool, found.decode)), list(map(bool, found.prefill_marks))
    return (*flags, list(found.decoded), list(found.prefill), len(found.prefill), prefixes)


def _outputs(
    paths: list[Path],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    on: bool,
    zone: str = "UTC",
) -> list[tuple[int, str]]:
    monkeypatch.setenv("ACCEPTMON_SCOUT", "1" if on else "0")
    out = []
    for command in _COMMANDS:
        code = cli.main([*command, "--timezone", zone, *map(str, paths)])
        out.append((code, capsys.readouterr().out))
    return out


@pytest.mark.parametrize("log", _logs(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_command_reads_a_log_alike_with_a_scout(
    log: Path, spy: Spy, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    here = _outputs([log], capsys, monkeypatch, on=False)
    assert not spy.fits  # sorted here: no scout
    assert _outputs([log], capsys, monkeypatch, on=True) == here
    assert all(spy.fits)  # (none where every chunk is cut at its events or read line by line)


def _busy_log(tmp_path: Path) -> Path:
    """Prefill, access and noise lines, a restart onto another draft with a drop, then
    request dumps, carriage returns and colour codes (each read line by line) half-way on."""
    path = tmp_path / "busy.log"
    generate(str(path), 6000)
    lines = path.read_text().splitlines()
    odd = [
        "[2026-11-30 01:00:00] Receive: obj=GenerateReqInput(rid='x', text='Decode batch, #running-req: 1')",
        "  a dump going on, Prefill batch quoted",
        "[2026-11-30 01:00:00 TP0] \x1b[32mCache flushed successfully!\x1b[0m",
        "[2026-11-30 01:00:01 TP0] Decode batch, #running-req: 2, #token: 10, token usage: 0.01, "
        "accept len: 2.10, gen throughput (token/s): 10.00, #queue-req: 0\r",
    ]
    lines[4000:4000] = odd
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_busy_log_and_its_rotations_read_alike_with_the_scouts_rows(
    tmp_path: Path, spy: Spy, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    busy = _busy_log(tmp_path)
    text = busy.read_bytes()
    cut = text.index(b"\n", len(text) // 2) + 1
    older, newer = tmp_path / "rot.log.1.gz", tmp_path / "rot.log"
    older.write_bytes(gzip.compress(text[:cut]))
    newer.write_bytes(text[cut:])
    for paths in ([busy], [older, newer]):
        here = _outputs(paths, capsys, monkeypatch, on=False)
        assert _outputs(paths, capsys, monkeypatch, on=True) == here
    assert spy.fits and all(spy.fits)
    assert spy.rows > 100  # the Decode rows of most chunks were the scout's


@pytest.mark.parametrize("zone", ["UTC", "Etc/Zulu", "America/New_York", "Etc/GMT-5"])
def test_the_scouts_times_are_the_readings_own(
    zone: str, tmp_path: Path, spy: Spy, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the zone has one offset (``prefix.fixed_offset``: UTC by any name), the Decode
    lines' times come from the scout, read in that offset; elsewhere (offset changes make a
    time depend on those before it) the reading process reads them itself. Either way every
    command's output is the same."""
    busy = _busy_log(tmp_path)
    taken: list[bool] = []
    epochs = bulk._epochs

    def spied(parser: LineParser, found: bulk.Sorted | None, n: int) -> list[float | None] | None:
        got = epochs(parser, found, n)
        taken.append(got is not None)
        return got

    monkeypatch.setattr(bulk, "_epochs", spied)
    here = _outputs([busy], capsys, monkeypatch, on=False, zone=zone)
    assert taken and not any(taken)
    taken.clear()
    assert _outputs([busy], capsys, monkeypatch, on=True, zone=zone) == here
    fixed = zone in ("UTC", "Etc/Zulu")
    assert (sum(taken) > len(taken) * 3 // 4) if fixed else taken and not any(taken)


def test_backfill_writes_the_same_history_with_a_scout(
    tmp_path: Path, spy: Spy, monkeypatch: pytest.MonkeyPatch
) -> None:
    busy = _busy_log(tmp_path)
    written = {}
    placed: list[bool] = []
    place = Lines.place

    def spied_place(lines: Lines, starts: array[int]) -> None:
        place(lines, starts)
        placed.append(lines.placed)

    monkeypatch.setattr(Lines, "place", spied_place)
    for on in (False, True):
        monkeypatch.setenv("ACCEPTMON_SCOUT", "1" if on else "0")
        out = tmp_path / f"out-{on}"
        monkeypatch.setenv("PATH", "")  # no promtool: the OpenMetrics alone
        cli.main(["backfill", "--out", str(out), "--timezone", "UTC", str(busy)])
        written[on] = {p.name: p.read_bytes() for p in sorted(out.glob("*.om"))}
    assert written[True] == written[False] and written[True]
    assert spy.fits and all(spy.fits)
    # The sampler reads lines anywhere in a chunk: the scout said where each starts.
    assert placed and all(placed)


def test_a_chunk_that_is_not_what_the_scout_read_is_sorted_here(tmp_path: Path) -> None:
    path = _busy_log(tmp_path)
    with path.open("rb") as stream:
        first = next(read_chunks("busy", stream, str(path)))[0]
    message = (0, *scout._Learner().message(first, scout._Times(UTC)))
    appended = replace(first, lines=(*first.lines[:-1], first.lines[-1] + " (appended later)"), text=None)
    for chunk in (appended, replace(first, lineno=2)):
        ahead, text = scout.Presorted(message), "\n".join(chunk.lines)
        assert ahead.sort(chunk, text) == bulk.sort_lines(chunk.lines, text)
        assert not ahead.used
    ahead, text = scout.Presorted(message), "\n".join(first.lines)
    assert _plain(ahead.sort(first, text)) == _plain(bulk.sort_lines(first.lines, text))
    assert ahead.used


def test_a_scout_that_dies_leaves_the_reading_whole(
    tmp_path: Path, spy: Spy, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    busy = _busy_log(tmp_path)
    here = _outputs([busy], capsys, monkeypatch, on=False)
    scan = scout._scan

    def dies(files: list[tuple[str, tzinfo]], placed: bool, writer: int) -> None:
        os.close(writer)  # nothing sent
        os._exit(1)

    monkeypatch.setattr(scout, "_scan", dies)
    assert _outputs([busy], capsys, monkeypatch, on=True) == here
    assert not spy.fits  # never an answer to take
    monkeypatch.setattr(scout, "_scan", scan)


def test_a_file_the_scout_was_not_given_is_sorted_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files are read in order; one the scout was not given (a FIFO, whose bytes go to one
    reader only, never is) has no answers, and the files after it still have theirs."""
    _scouting_always(monkeypatch)
    given, other, fifo = _busy_log(tmp_path), tmp_path / "other.log", tmp_path / "fifo"
    other.write_bytes(given.read_bytes())
    os.mkfifo(fifo)
    with scout.scouting([(str(given), UTC)]) as found:
        assert found is not None
        found.file(str(other))
        assert found.next() is None
        found.file(str(given))
        assert found.next() is not None
    with scout.scouting([(str(given), UTC), (str(fifo), UTC), (str(other), UTC)]) as found:
        assert found is not None
        assert found._paths == [str(given), str(other)]
        found.file(str(fifo))
        assert found.next() is None
        found.file(str(other))  # the scout's answers for ``given`` are passed over
        ahead = found.next()
        assert ahead is not None
        with other.open("rb") as stream:
            chunk = next(read_chunks("other", stream, str(other)))[0]
        ahead.sort(chunk, "\n".join(chunk.lines))
        assert ahead.used
        found.file(str(given))  # read before ``other``: passed already
        assert found.next() is None


def test_times_read_in_another_offset_or_of_other_lines_are_not_taken() -> None:
    parser = LineParser("x", None, UTC)
    times = [1.0, 2.0]
    found = bulk.Sorted(b"", b"", [], [], [], None, None, (UTC, times))
    assert bulk._epochs(parser, found, 2) == times
    assert bulk._epochs(parser, found, 3) is None  # not these lines' times
    elsewhere = found._replace(epochs=(timezone(timedelta(hours=1)), times))
    assert bulk._epochs(parser, elsewhere, 2) is None
    assert bulk._epochs(LineParser("x", None, ZoneInfo("Europe/Berlin")), found, 2) is None
