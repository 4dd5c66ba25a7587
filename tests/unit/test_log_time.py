"""The one rule for naive log times: zone, DST gap and fold, host and remote zones."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from acceptmon import log_time
from acceptmon.log_time import LocalTime
from acceptmon.model import DecodeSample
from acceptmon.parse.line import LineParser

LA = ZoneInfo("America/Los_Angeles")
DECODE = (
    "[{}] Decode batch, #running-req: 3, #token: 100, token usage: 0.01, accept len: 2.50, "
    "accept rate: 0.50, cuda graph: True, gen throughput (token/s): 100.00, #queue-req: 0, "
)


def test_plain_wall_time_gets_the_zone_offset() -> None:
    ts = LocalTime(ZoneInfo("Asia/Kolkata")).aware(datetime(2026, 12, 2, 12, 0))
    assert ts.astimezone(UTC) == datetime(2026, 12, 2, 6, 30, tzinfo=UTC)


def test_spring_forward_gap_moves_forward_by_the_gap() -> None:
    ts = LocalTime(LA).aware(datetime(2026, 3, 8, 2, 30))  # 02:00-03:00 never happened
    assert ts.astimezone(UTC) == datetime(2026, 3, 8, 10, 30, tzinfo=UTC)
    assert ts.replace(tzinfo=None) == datetime(2026, 3, 8, 3, 30)
    assert ts.utcoffset() == LA.utcoffset(datetime(2026, 3, 8, 12))


def test_fold_is_first_pass_until_the_log_has_moved_past_it() -> None:
    local = LocalTime(LA)
    first = local.aware(datetime(2026, 11, 1, 1, 30))
    assert first.astimezone(UTC) == datetime(2026, 11, 1, 8, 30, tzinfo=UTC)  # PDT
    late = local.aware(datetime(2026, 11, 1, 1, 59))
    again = local.aware(datetime(2026, 11, 1, 1, 0))  # the clock went back an hour
    assert again.astimezone(UTC) == datetime(2026, 11, 1, 9, 0, tzinfo=UTC)  # PST
    assert again > late
    # A line a few seconds out of order (another rank) is not taken as the second pass.
    local2 = LocalTime(LA)
    local2.aware(datetime(2026, 11, 1, 1, 30, 5))
    assert local2.aware(datetime(2026, 11, 1, 1, 30, 1)).utcoffset() == first.utcoffset()


def test_sglang_prefix_is_read_in_the_parser_zone() -> None:
    rec = LineParser("s", zone=LA).parse(DECODE.format("2026-12-02 04:00:00 TP0"), 1)
    assert isinstance(rec, DecodeSample) and rec.meta.ts is not None
    assert rec.meta.ts.tzinfo is not None
    assert rec.meta.ts.astimezone(UTC) == datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def test_bad_zone_name_is_a_plain_value_error() -> None:
    with pytest.raises(ValueError, match="unknown time zone 'Mars/Olympus'"):
        log_time.zone("Mars/Olympus")
    with pytest.raises(ValueError):
        log_time.zone("../../etc/passwd")


def test_host_zone_honours_tz(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "Asia/Kolkata")
    assert log_time.zone_name(log_time.host_zone()) == "Asia/Kolkata"
    monkeypatch.setenv("TZ", ":America/Los_Angeles")
    assert log_time.zone_name(log_time.host_zone()) == "America/Los_Angeles"


def test_host_zone_from_localtime_link_or_bytes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("TZ", raising=False)
    link = tmp_path / "localtime"
    link.symlink_to("/usr/share/zoneinfo/Europe/Berlin")
    monkeypatch.setattr(log_time, "LOCALTIME", str(link))
    assert log_time.zone_name(log_time.host_zone()) == "Europe/Berlin"
    copy = tmp_path / "copied"
    copy.write_bytes(Path("/usr/share/zoneinfo/Europe/Berlin").read_bytes())
    monkeypatch.setattr(log_time, "LOCALTIME", str(copy))
    tz = log_time.host_zone()
    assert datetime(2026, 7, 1, tzinfo=tz).utcoffset() != datetime(2026, 1, 1, tzinfo=tz).utcoffset()


def test_remote_zone_from_bytes_else_utc_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    data = Path("/usr/share/zoneinfo/Asia/Kolkata").read_bytes()
    tz = log_time.source_zone(None, lambda _path: data)
    assert datetime(2026, 1, 1, tzinfo=tz).utcoffset() == ZoneInfo("Asia/Kolkata").utcoffset(
        datetime(2026, 1, 1)
    )
    assert log_time.source_zone(None, lambda _path: b"not tzif") is UTC
    assert "reading its log times as UTC" in caplog.text
    assert log_time.zone_name(log_time.source_zone("Europe/Berlin", lambda _p: data)) == "Europe/Berlin"


@pytest.mark.parametrize(
    ("seconds", "words"),
    [(45, "45 s"), (125, "2 min"), (7500, "2 h 5 min"), (7200, "2 h"), (3 * 86400 + 4 * 3600, "3 d 4 h")],
)
def test_stall_duration_in_words(seconds: float, words: str) -> None:
    from acceptmon.detect.source import duration_words

    assert duration_words(seconds) == words
