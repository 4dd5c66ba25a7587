"""/metrics of an agent following a glob of 5,000 files: scrape time, size and RSS.

Writes ``--files`` small SGLang logs (a start and a few Decode lines each: every
per-source family has a value), starts a real ``acceptmon run`` on one glob, waits
until every line is read, then scrapes ``/metrics`` ``--scrapes`` times and prints
the median scrape time, the response size, the series count and the agent's RSS.
With ``--before DIR`` (a checkout of the code to compare with, e.g. ``/work/main``)
it measures that code the same way first and prints the ratios. Timings on shared
machines are noisy: read the ratios.

    .venv/bin/python bench/many_sources.py [--files 5000] [--before /work/main]
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from acceptmon.testing import synth

ROOT = Path(__file__).resolve().parent.parent
T0 = datetime(2026, 11, 30, 12, 0, 0)
DECODE_LINES = 5


def write_logs(logs: Path, n: int) -> int:
    """``n`` logs of a start and ``DECODE_LINES`` Decode lines; returns the lines written."""
    head = synth.startup(T0, 1)
    for i in range(n):
        body = [synth.decode_line(T0 + timedelta(seconds=30 + j), 2.0 + j / 10) for j in range(DECODE_LINES)]
        (logs / f"server-{i:05d}.log").write_text("\n".join([*head, *body]) + "\n")
    return n * (len(head) + DECODE_LINES)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def scrape(port: int) -> tuple[float, bytes]:
    start = time.perf_counter()
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=60) as r:
        body = r.read()
    return time.perf_counter() - start, body


def lines_read(port: int) -> float:
    try:
        text = scrape(port)[1].decode()
    except OSError:
        return -1.0
    total = 0.0
    for x in text.splitlines():
        if x.startswith(("acceptmon_lines_total{", "acceptmon_sources_over_budget_lines_total")):
            total += float(x.rsplit(" ", 1)[1])
    return total


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def measure(root: Path, n: int, scrapes: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="acceptmon-bench-") as tmp:
        logs = Path(tmp) / "logs"
        logs.mkdir()
        expected = write_logs(logs, n)
        port = free_port()
        cmd = [sys.executable, "-m", "acceptmon", "run", "--listen", f"127.0.0.1:{port}"]
        cmd += ["--state-dir", str(Path(tmp) / "state"), str(logs / "*.log")]
        env = {**os.environ, "PYTHONPATH": str(root)}
        proc = subprocess.Popen(cmd, env=env, cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 600
            while lines_read(port) < expected:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise SystemExit(f"agent ({root}) with {n} files did not read them all")
                time.sleep(1)  # polling interval of a deadline loop
            times, body = [], b""
            for _ in range(scrapes):
                seconds, body = scrape(port)
                times.append(seconds)
            series = sum(1 for x in body.splitlines() if x and not x.startswith(b"#"))
            return {
                "seconds": statistics.median(times),
                "mb": len(body) / 1e6,
                "series": series,
                "rss": rss_mb(proc.pid),
            }
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(60)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=5000)
    ap.add_argument("--scrapes", type=int, default=5)
    ap.add_argument("--before", type=Path, help="a checkout of the code to compare with")
    args = ap.parse_args()
    rows = []
    if args.before is not None:
        rows.append((f"before ({args.before})", measure(args.before, args.files, args.scrapes)))
    rows.append((f"this ({ROOT})", measure(ROOT, args.files, args.scrapes)))
    print(f"{args.files} files")
    print(f"{'code':<34} {'scrape s':>9} {'MB':>7} {'series':>8} {'RSS MB':>8}")
    for name, r in rows:
        print(f"{name:<34} {r['seconds']:9.3f} {r['mb']:7.2f} {r['series']:8.0f} {r['rss']:8.0f}")
    if len(rows) == 2:
        (_, a), (_, b) = rows
        print(
            f"ratios before/after: scrape {a['seconds'] / b['seconds']:.1f}x, size {a['mb'] / b['mb']:.1f}x, "
            f"series {a['series'] / b['series']:.1f}x, RSS {a['rss'] / b['rss']:.2f}x"
        )


if __name__ == "__main__":
    main()
