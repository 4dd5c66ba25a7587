"""``PrefixCache.table`` (a batch's stamps, one loop) gives each prefix exactly what ``get``
gives it, in fixed-offset zones (the written-out minute rule) and in zones with DST."""

from __future__ import annotations

from zoneinfo import ZoneInfo

import pytest

from acceptmon.log_time import LocalTime
from acceptmon.parse.prefix import PrefixCache

PREFIXES = [
    f"[2026-03-29 0{h}:{m:02d}:{s:02d}{rank}] "
    for h in (0, 1, 2, 3)
    for m in (0, 59)
    for s in (0, 1, 30, 59)
    for rank in ("", " TP0", " DP1 TP3")
] + ["[2026-03-29 01:00:00.250 TP0] ", "2026-03-29 01:00:07,125 INFO ", "no time at all ", ""]


@pytest.mark.parametrize("zone", ["UTC", "Europe/Berlin", "Asia/Kolkata"])
def test_table_equals_get_for_every_prefix(zone: str) -> None:
    table = PrefixCache(LocalTime(ZoneInfo(zone))).table(PREFIXES * 3)
    one = PrefixCache(LocalTime(ZoneInfo(zone)))
    assert table == {p: one.get(p) for p in PREFIXES}
