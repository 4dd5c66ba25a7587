"""``acceptmon.read_log`` against ``acceptmon oneshot`` on the same log, in one run.

The notebook API is built from the fast path's batches, so loading a log into
a DataFrame should cost about what ``oneshot`` does. Prints each one's median
wall time over ``--repeat`` runs (fresh processes) and the ratio.

    .venv/bin/python bench/read_log.py [--lines 1000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.gen_log import generate


def timed(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        log = str(Path(tmp) / "big.log")
        generate(log, args.lines)
        oneshot = [sys.executable, "-m", "acceptmon", "oneshot", "--timezone", "UTC", log]
        frame = [
            sys.executable,
            "-c",
            f"import acceptmon; df = acceptmon.read_log({log!r}, timezone='UTC'); assert len(df) > 0",
        ]
        runs = {"oneshot": [], "read_log": []}
        for _ in range(args.repeat):  # interleaved, so drift in machine load hits both alike
            runs["oneshot"].append(timed(oneshot))
            runs["read_log"].append(timed(frame))
    med = {k: statistics.median(v) for k, v in runs.items()}
    for name, secs in med.items():
        print(f"{name:>9}: {secs:6.2f} s median, {args.lines / secs / 1e3:7.0f}k lines/s")
    print(f"read_log / oneshot time: {med['read_log'] / med['oneshot']:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
