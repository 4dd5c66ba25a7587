"""``read_log`` on a log whose times pandas cannot hold (past 2262): those times are dropped with a
warning naming how many, and the rest of the log is read (pandas' ns range failed the whole log
when another line had fractional seconds)."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pytest

from acceptmon.testing import synth

START = datetime(2026, 3, 1, 12, 0, 0)


def test_a_time_past_2262_is_dropped_with_a_count_not_fatal(tmp_path: Path) -> None:
    from acceptmon import read_log

    lines = synth.startup(START, 1)
    lines += [synth.decode_line(START + timedelta(seconds=10 + i), 2.4) for i in range(5)]
    # One line with fractional seconds (SGLang prints milliseconds with some formats) ...
    lines.append(synth.decode_line(START + timedelta(seconds=20), 2.4).replace(":20 TP0]", ":20.250 TP0]", 1))
    # ... and one corrupted far-future timestamp.
    lines.append(synth.decode_line(datetime(9999, 12, 31, 23, 59, 59), 2.3))
    log = tmp_path / "server.log"
    log.write_text("".join(line + "\n" for line in lines))

    with pytest.warns(UserWarning, match=r"1 line time.*outside"):
        df = read_log(str(log), timezone="UTC")
    assert len(df) == 7  # every interval is kept; only the unusable time is dropped
    assert df["ts"].isna().sum() == 1
    assert df["ts"].dropna().max() < datetime(2027, 1, 1).astimezone()
    assert df["ts"].dropna().dt.microsecond.max() == 250_000
