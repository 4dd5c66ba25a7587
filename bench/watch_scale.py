"""Idle CPU of the agent following 100 vs 2,000 quiet files (one glob).

Watching should scale with events, not with the number of files. For each
count, a real ``acceptmon run`` follows ``N`` files of a few lines each; once
every file is read, its CPU time (user+sys from /proc/PID/stat) is sampled over
``--seconds`` of silence and printed as % of one core, with the ratio of the
large count to the small one.

    .venv/bin/python bench/watch_scale.py [--small 100] [--large 2000] [--seconds 15]
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def lines_read(port: int) -> float:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            text = r.read().decode()
    except OSError:
        return -1.0
    return sum(
        float(x.rsplit(" ", 1)[1]) for x in text.splitlines() if x.startswith("acceptmon_lines_total{")
    )


def measure(n: int, seconds: float) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        logs = Path(tmp) / "logs"
        logs.mkdir()
        for i in range(n):
            (logs / f"server-{i:05d}.log").write_text("[2026-12-01 12:00:00] INFO: started\n" * 3)
        port = free_port()
        cmd = [sys.executable, "-m", "acceptmon", "run", "--listen", f"127.0.0.1:{port}"]
        cmd += ["--state-dir", str(Path(tmp) / "state"), str(logs / "*.log")]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 120
            while lines_read(port) < 3 * n:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise SystemExit(f"agent with {n} files did not read them all")
                time.sleep(0.2)  # polling interval of a deadline loop
            time.sleep(3)  # settle: let start-up work (first checkpoints, rescans) finish
            before, t0 = cpu_seconds(proc.pid), time.monotonic()
            time.sleep(seconds)  # the measurement window itself
            return 100 * (cpu_seconds(proc.pid) - before) / (time.monotonic() - t0)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", type=int, default=100)
    ap.add_argument("--large", type=int, default=2000)
    ap.add_argument("--seconds", type=float, default=15.0)
    args = ap.parse_args()
    small = measure(args.small, args.seconds)
    large = measure(args.large, args.seconds)
    print(f"{'files':>6}  {'idle CPU % of a core':>20}")
    print(f"{args.small:>6}  {small:>20.1f}")
    print(f"{args.large:>6}  {large:>20.1f}")
    print(
        f"ratio {args.large}/{args.small}: {large / max(small, 0.05):.1f}x for {args.large / args.small:.0f}x the files"
    )


if __name__ == "__main__":
    main()
