"""``acceptmon report`` against ``acceptmon oneshot`` on the bench log, in one run (issue 22: ≤ 1.5×).

Each command runs in a fresh process, interleaved (oneshot, findings, report,
oneshot, ...) so drift in the machine's load hits all alike; prints the median wall
times, the ratios to oneshot's and the HTML's size. ``oneshot --format findings``
runs the same detector over the log as the report does, so report minus findings
is what the report adds of its own (series, plots, page). ``--old DIR`` also times
the report of an older checkout (``git archive main | tar -x -C DIR``) on the same log.

    .venv/bin/python bench/report_ratio.py [--lines 1000000] [--repeat 3] [--old DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bytecode import compile_acceptmon
from bench.gen_log import generate

ROOT = Path(__file__).resolve().parents[1]


def timed(cmd: list[str], code: Path, cwd: str) -> float:
    """Seconds ``cmd`` takes with the acceptmon in ``code`` (run from ``cwd``: ``-m`` puts the
    working directory first on the path)."""
    start = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(code)}
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=env, cwd=cwd)
    return time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--old", type=Path, help="an older acceptmon checkout whose report to time too")
    args = ap.parse_args()
    compile_acceptmon()
    with tempfile.TemporaryDirectory() as tmp:
        log = str(Path(tmp) / "big.log")
        generate(log, args.lines)
        acceptmon = [sys.executable, "-m", "acceptmon"]
        oneshot = [*acceptmon, "oneshot", "--timezone", "UTC", log]
        commands = {
            "oneshot": (oneshot, ROOT),
            "findings": ([*oneshot, "--format", "findings"], ROOT),
            "report": ([*acceptmon, "report", "--timezone", "UTC", log, "-o", f"{tmp}/new.html"], ROOT),
        }
        if args.old:
            old = [*acceptmon, "report", "--timezone", "UTC", log, "-o", f"{tmp}/old.html"]
            commands["old report"] = (old, args.old.resolve())
        runs: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.repeat):
            for name, (cmd, code) in commands.items():
                runs[name].append(timed(cmd, code, tmp))
        sizes = {
            name: Path(tmp, f"{'old' if name == 'old report' else 'new'}.html").stat().st_size
            for name in runs
            if name.endswith("report")
        }
    med = {k: statistics.median(v) for k, v in runs.items()}
    for name, secs in med.items():
        size = f", HTML {sizes[name] / 1e3:,.0f} kB" if name in sizes else ""
        print(f"{name:>10}: {secs:6.2f} s median ({args.lines / secs / 1e3:5.0f}k lines/s){size}")
    for name in ["findings", *sizes]:
        print(f"{name} / oneshot time: {med[name] / med['oneshot']:.2f}x")
    print(f"(report - findings) / oneshot time: {(med['report'] - med['findings']) / med['oneshot']:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
