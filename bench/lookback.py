"""The look-back commands against plain ``oneshot`` on the same generated log, in one run.

Issue 22's "Must show": each of ``runs``, ``read_log``, ``oneshot --format findings``,
``backfill`` and ``report`` within 1.5× of ``oneshot``'s time, ``--format jsonl`` within
3×. Each command runs as a fresh process between two ``oneshot`` runs and is divided by
their mean, so drift in the (shared) machine's load hits both sides alike; wall and CPU
time are both shown (the bound is on wall time; CPU time is steadier on a busy machine).
acceptmon's bytecode is compiled first, as an install compiles it (``bench/bytecode.py``).

    .venv/bin/python bench/lookback.py [--lines 1000000] [--log PATH] [--only findings,jsonl] [--repeat 3]
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bytecode import compile_acceptmon
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


def timed(cmd: list[str]) -> tuple[float, float, int]:
    """Wall time, CPU time (user + system) and exit status (``runs`` exits 3 when the verdict
    is "worse": still timed). CPU time is what a busy shared machine disturbs least."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu, done.returncode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--log", help="an existing log to read instead of generating one")
    ap.add_argument("--only", help="comma-separated commands to time (default: all)")
    ap.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="time each command this many times (each between two oneshots) and show the median"
        " ratio: a shared VM's load swings by ±15%% between runs",
    )
    args = ap.parse_args()
    compile_acceptmon()
    with tempfile.TemporaryDirectory() as tmp:
        log = args.log or str(Path(tmp) / "bench.log")
        if not args.log:
            generate(log, args.lines)
        todo = commands(log, Path(tmp))
        if args.only:
            todo = {k: v for k, v in todo.items() if k in args.only.split(",")}
        oneshot = [sys.executable, "-m", "acceptmon", "oneshot", "--timezone", "UTC", log]
        after = timed(oneshot)
        print(f"{'':>9}  {'wall time':^26}  {'CPU time':^26}")
        print(
            f"{'command':>9}  {'it':>7} {'oneshot':>8} {'ratio':>8}  {'it':>7} {'oneshot':>8} {'ratio':>8}  limit"
        )
        worst = 0.0
        for name, cmd in todo.items():
            rows = []
            for _ in range(args.repeat):
                before = after
                wall, cpu, status = timed(cmd)
                after = timed(oneshot)
                base_wall, base_cpu = (before[0] + after[0]) / 2, (before[1] + after[1]) / 2
                rows.append((wall / base_wall, cpu / base_cpu, wall, base_wall, cpu, base_cpu, status))
            ratio, cpu_ratio, wall, base_wall, cpu, base_cpu, status = sorted(rows)[len(rows) // 2]
            limit = LIMITS.get(name, DEFAULT_LIMIT)
            worst = max(worst, ratio / limit)
            mark = "ok" if ratio <= limit else "OVER"
            spread = f" (ratios {min(rows)[0]:.2f}-{max(rows)[0]:.2f})" if len(rows) > 1 else ""
            print(
                f"{name:>9}  {wall:6.2f}s {base_wall:7.2f}s {ratio:7.2f}x  {cpu:6.2f}s {base_cpu:7.2f}s "
                f"{cpu_ratio:7.2f}x  {limit:.1f}x {mark}" + (f" (exit {status})" if status else "") + spread
            )
    return 0 if worst <= 1.0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
