"""``acceptmon backfill`` never writes a sample (hence a TSDB block) after now, nor at a time far
from both neighbouring lines' times: one block ending in year 9999, copied into Prometheus, makes
its time retention (counted back from the newest block) delete every other block.

Real promtool: every block's meta.json ``maxTime`` is ≤ now and ``minTime`` is within the log's span.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from acceptmon.testing import synth
from tests.support.tools import require_tool

pytestmark = pytest.mark.system


def test_far_future_and_isolated_past_times_make_no_block(tmp_path: Path) -> None:
    require_tool("promtool")
    start = datetime.now().replace(microsecond=0) - timedelta(days=3)
    lines = synth.startup(start, 1)
    decode = [synth.decode_line(start + timedelta(seconds=30 + 10 * i), 2.4, 8) for i in range(60)]
    decode[20] = synth.decode_line(datetime(9999, 12, 31, 23, 59, 59), 2.4, 8)  # a corrupted stamp
    decode[40] = synth.decode_line(datetime(2001, 1, 1, 0, 0, 0), 2.4, 8)  # a bad RTC, one line
    log = tmp_path / "server.log"
    log.write_text("".join(line + "\n" for line in lines + decode))
    out = tmp_path / "out"

    began = time.time()
    done = subprocess.run(
        [sys.executable, "-m", "acceptmon", "backfill", str(log), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "2 line time(s) not used as sample times: 1 after now, 1 far from" in done.stderr
    assert "Traceback" not in done.stderr

    stamps = [float(line.rsplit(" ", 1)[1]) for line in (out / "acceptmon.om").read_text().splitlines()[:-1]
              if not line.startswith("#")]  # fmt: skip
    span = (start.timestamp() - 1, (start + timedelta(seconds=640)).timestamp() + 1)
    assert stamps and all(span[0] <= t <= span[1] for t in stamps)

    text = (out / "acceptmon.om").read_text()
    last_line = [float(x.split(" ")[1]) for x in text.splitlines() if x.startswith("acceptmon_last_decode_")]
    assert last_line and max(last_line) <= began  # the gauge never holds the future line's time either

    metas = [json.loads(p.read_text()) for p in (out / "blocks").glob("*/meta.json")]
    assert metas, "promtool wrote no block"
    for meta in metas:
        assert meta["maxTime"] <= began * 1000 + 1, meta
        assert meta["minTime"] >= span[0] * 1000 - 2 * 3600 * 1000, meta  # blocks are 2 h aligned
