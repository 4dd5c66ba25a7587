"""Reading a log whose lines carry many distinct DP-rank prefixes, against one with few.

SGLang with DP attention prefixes each line with its ranks (``[ts DP12 TP12 EP12]``).
A log naming 100,000 distinct DP ranks once made reading 26x slower than a log of
the same size naming 8: the store recomputed the whole-server gauges over every
remembered rank for every rank of every batch. Writes both logs (same number of
lines, same values), times ``acceptmon oneshot`` on each (median of ``--repeat``)
and prints the ratio. Timings on shared machines are noisy: read the ratio.
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from acceptmon.testing import synth


def generate(path: Path, lines: int, distinct: int, seed: int = 1) -> int:
    """``lines`` Decode lines cycling through ``distinct`` DP ranks; returns bytes written."""
    rng = random.Random(seed)
    ts = datetime(2026, 11, 30)
    out = [synth.server_args_line(ts)]
    for i in range(lines):
        if i % 7 == 0:
            ts += timedelta(seconds=1)
        rank = f" DP{i % distinct} TP{i % distinct % 8} EP{i % distinct % 8}"
        out.append(synth.decode_line(ts, 1 + rng.random() * 2.5, rng.randrange(1, 64), rank=rank))
    text = "\n".join(out) + "\n"
    path.write_text(text)
    return len(text)


def seconds(log: Path, repeat: int) -> float:
    cmd = [sys.executable, "-m", "acceptmon", "oneshot", str(log)]
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lines", type=int, default=200_000)
    ap.add_argument("--distinct", type=int, default=100_000, help="distinct DP ranks in the many-prefix log")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="acceptmon-bench-") as work:
        few, many = Path(work, "few.log"), Path(work, "many.log")
        few_bytes, many_bytes = generate(few, args.lines, 8), generate(many, args.lines, args.distinct)
        few_s, many_s = seconds(few, args.repeat), seconds(many, args.repeat)
    print(f"{'log':<28} {'MB':>7} {'seconds':>8}")
    print(f"{'8 DP ranks':<28} {few_bytes / 1e6:7.1f} {few_s:8.2f}")
    print(f"{f'{args.distinct:,} DP ranks':<28} {many_bytes / 1e6:7.1f} {many_s:8.2f}")
    print(f"ratio many/few: {many_s / few_s:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
