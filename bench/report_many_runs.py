"""``acceptmon report`` on a log of many short runs: wall time and peak RSS, optionally old vs new.

Each run of the report is a fresh process; its peak RSS comes from ``wait4``.
``--old DIR`` also times a checkout of an older acceptmon (e.g. one made with
``git archive main | tar -x -C DIR``) on the same log and prints the ratios.

    .venv/bin/python bench/report_many_runs.py [--runs 2000] [--old DIR]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from acceptmon.testing.many_runs import many_runs

ROOT = Path(__file__).resolve().parents[1]


def measure(code: Path, log: str, out: str) -> tuple[float, float, int]:
    """(seconds, peak RSS in MB, HTML bytes) for one report by the acceptmon in ``code``."""
    env = {**os.environ, "PYTHONPATH": str(code)}
    cmd = [sys.executable, "-m", "acceptmon", "report", "--timezone", "UTC", log, "-o", out]
    start = time.perf_counter()
    # From the log's directory: ``-m`` puts the working directory first on the path.
    proc = subprocess.Popen(
        cmd, env=env, cwd=Path(log).parent, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(
            f"report failed ({proc.returncode}): {proc.stderr.read().decode() if proc.stderr else ''}"
        )
    return elapsed, usage.ru_maxrss / 1024, Path(out).stat().st_size


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=2000)
    ap.add_argument("--old", type=Path, help="an older acceptmon checkout to compare against")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        log = str(Path(tmp) / "many-runs.log")
        many_runs(log, args.runs)
        print(f"log: {args.runs} runs, {Path(log).stat().st_size / 1e6:.1f} MB")
        rows = {"new": measure(ROOT, log, str(Path(tmp) / "new.html"))}
        if args.old:
            rows["old"] = measure(args.old.resolve(), log, str(Path(tmp) / "old.html"))
    for name, (secs, rss, size) in rows.items():
        print(f"{name}: {secs:.1f} s, peak RSS {rss:.0f} MB, HTML {size / 1e6:.2f} MB")
    if "old" in rows:
        (new_s, new_rss, _), (old_s, old_rss, _) = rows["new"], rows["old"]
        print(f"old/new: time {old_s / new_s:.1f}x, peak RSS {old_rss / new_rss:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
