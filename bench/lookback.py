"""The look-back commands against plain ``oneshot`` on the same generated log, in one run.

Issue 22's "Must show": each of ``runs``, ``read_log``, ``oneshot --format findings``,
``backfill`` and ``report`` within 1.5× of ``oneshot``'s time, ``--format jsonl`` within
3×. Each command runs as a fresh process between two ``oneshot`` runs and is divided by
their mean, so drift in the (shared) machine's load hits both sides alike.

    .venv/bin/python bench/lookback.py [--lines 1000000] [--log PATH] [--only findings,jsonl]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.gen_log import generate

#: The issue's bound on each command's time / oneshot's.
LIMITS = {"jsonl": 3.0}
DEFAULT_LIMIT = 1.5


def commands(log: str, out: Path) -> dict[str, list[str]]:
    """Each command as the user would type it (stdout is discarded, files go under ``out``)."""
    am = [sys.executable, "-m", "acceptmon"]
    frame = f"import acceptmon; df = acceptmon.read_log({log!r}, timezone='UTC'); assert len(df) > 0"
    return {
        "runs": [*am, "runs", "--timezone", "UTC", log],
        "read_log": [sys.executable, "-c", frame],
        "findings": [*am, "oneshot", "--format", "findings", "--timezone", "UTC", log],
        "jsonl": [*am, "oneshot", "--format", "jsonl", "--timezone", "UTC", log],
        "backfill": [*am, "backfill", "--out", str(out / "backfill"), "--timezone", "UTC", log],
        "report": [*am, "report", "-o", str(out / "report.html"), "--timezone", "UTC", log],
    }


def timed(cmd: list[str]) -> tuple[float, int]:
    """Wall time and exit status (``runs`` exits 3 when the verdict is "worse": still timed)."""
    start = time.perf_counter()
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start, done.returncode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--log", help="an existing log to read instead of generating one")
    ap.add_argument("--only", help="comma-separated commands to time (default: all)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        log = args.log or str(Path(tmp) / "bench.log")
        if not args.log:
            generate(log, args.lines)
        todo = commands(log, Path(tmp))
        if args.only:
            todo = {k: v for k, v in todo.items() if k in args.only.split(",")}
        oneshot = [sys.executable, "-m", "acceptmon", "oneshot", "--timezone", "UTC", log]
        after, _ = timed(oneshot)
        print(f"{'command':>9}  {'time':>8}  {'oneshot':>8}  {'ratio':>6}  limit  exit")
        worst = 0.0
        for name, cmd in todo.items():
            before = after
            secs, status = timed(cmd)
            after, _ = timed(oneshot)
            base = (before + after) / 2
            ratio = secs / base
            limit = LIMITS.get(name, DEFAULT_LIMIT)
            worst = max(worst, ratio / limit)
            mark = "ok" if ratio <= limit else "OVER"
            print(f"{name:>9}  {secs:7.2f}s  {base:7.2f}s  {ratio:5.2f}x  {limit:.1f}x {mark:>4}  {status}")
    return 0 if worst <= 1.0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
