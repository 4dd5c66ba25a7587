"""A 2 MB server_args line is a counted error at bounded memory (issue 14 §7).

Before the 256 KiB cap, ``ast`` parsed it whole: 645 MB peak RSS and 3 s for
one dense 2 MB line (the unit's MemoryMax is 1 GB). Measured in a fresh
interpreter each, as a ratio to the same run on a normal log.
"""

from __future__ import annotations

import os
import subprocess
import sys

SCRIPT = """
import resource, sys
from datetime import datetime
from acceptmon.model import Chunk
from acceptmon.ingest import Pipeline
from acceptmon.testing.synth import decode_line, server_args_line
t = datetime(2026, 1, 1)
size = int(sys.argv[1])
start = server_args_line(t, blob=[0] * (size // 3)) if size else server_args_line(t)
p = Pipeline()
p.feed(Chunk("s", (start, *[decode_line(t, 2.0)] * 100), 1))
s = p.store.stats("s")
print(len(start), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, s.error_kinds["too_large"],
      s.counters["decode_batches"])
"""


def _run(size: int) -> tuple[int, int, float, float]:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(size)], capture_output=True, text=True, check=True, env=os.environ
    ).stdout.split()
    return int(out[0]), int(out[1]), float(out[2]), float(out[3])


def test_two_megabyte_start_line_is_counted_at_bounded_memory() -> None:
    _, base_rss, base_err, base_decode = _run(0)
    big_len, big_rss, big_err, big_decode = _run(2_000_000)
    assert big_len >= 2_000_000 and base_err == 0
    assert big_err == 1 and big_decode == base_decode == 100
    assert big_rss < 2 * base_rss, f"peak RSS {big_rss} KiB vs {base_rss} KiB on a normal log"
