"""Fan-out benchmark: one process tailing 50 remote logs over SSH vs the same 50 tailed locally.

A real sshd on loopback serves 50 files (spread over ``--hosts`` loopback
addresses, one shared connection and worker thread per address); a writer
process appends one Decode line per second to each. Each mode runs in its own
child process so its CPU and RSS are its own, measured over the same window:
CPU% from getrusage (user+sys) over wall time, RSS from /proc/self/status,
plus the line latency (write time stamped in the line → returned by poll).

    .venv/bin/python bench/ssh_fanout.py [--files 50] [--hosts 5] [--seconds 20]

Prints a table and SSH/local ratios. The default run takes under a minute.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

POLL_EVERY = 0.1


def writer(files: list[str], seconds: float) -> None:
    """Append one stamped Decode line per second to every file, spread over the second."""
    fds = [os.open(f, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644) for f in files]
    start = time.monotonic()
    n = 0
    while time.monotonic() - start < seconds:
        for i, fd in enumerate(fds):
            due = start + n + i / len(fds)
            pause = due - time.monotonic()
            if pause > 0:
                time.sleep(pause)  # pacing, not synchronisation
            stamp = time.time()
            os.write(
                fd,
                f"[2025-06-01 12:00:00 TP0] Decode batch. #running-req: 8, #token: 4096, token usage: 0.05, "
                f"accept len: 3.21, gen throughput (token/s): 812.50, #queue-req: 0, t={stamp:.6f}\n".encode(),
            )
        n += 1


def rss_kib() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def cpu_seconds() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def make_sources(mode: str, spec: dict[str, Any]) -> list[Any]:
    files = [str(f) for f in spec["files"]]
    if mode == "local":
        try:
            from acceptmon.clock import SystemClock
            from acceptmon.sources.local import LocalSource
        except ImportError:
            return [PlainTail(f) for f in files]
        return [LocalSource(f"l{i}", f, clock=SystemClock()) for i, f in enumerate(files)]
    from acceptmon.sources.ssh import SSHSource
    from acceptmon.sources.ssh.options import SSHSettings

    settings = SSHSettings(
        ssh_config=None,
        known_hosts=str(spec["known_hosts"]),
        identity_files=(str(spec["key"]),),
        use_agent=False,
    )
    hosts = spec["hosts"]
    port = spec["port"]
    return [
        SSHSource(f"r{i}", f"ssh://{hosts[i % len(hosts)]}:{port}{f}", settings) for i, f in enumerate(files)
    ]


class PlainTail:
    """Fallback peer: stat + read of a local file, no rotation handling."""

    def __init__(self, path: str) -> None:
        self.path, self.pos, self.tail = path, 0, b""

    def poll(self) -> list[Any]:
        if os.stat(self.path).st_size <= self.pos:
            return []
        with open(self.path, "rb") as f:
            f.seek(self.pos)
            data = self.tail + f.read()
        self.pos += len(data) - len(self.tail)
        *lines, self.tail = data.split(b"\n")
        return [type("C", (), {"lines": [x.decode() for x in lines]})()]

    def close(self) -> None:
        pass


def child(mode: str, spec: dict[str, Any], seconds: float) -> dict[str, float]:
    """Tail every file until all have delivered, then measure a window."""
    sources = make_sources(mode, spec)
    latencies: list[float] = []

    def poll_all() -> int:
        got = 0
        for s in sources:
            for chunk in s.poll():
                now = time.time()
                for line in chunk.lines:
                    latencies.append(now - float(line.rsplit("t=", 1)[1]))
                got += len(chunk.lines)
        return got

    deadline = time.monotonic() + 30
    while len(latencies) < len(sources) and time.monotonic() < deadline:
        poll_all()
        time.sleep(POLL_EVERY)
    latencies.clear()
    cpu0, t0, lines = cpu_seconds(), time.monotonic(), 0
    while time.monotonic() - t0 < seconds:
        lines += poll_all()
        time.sleep(POLL_EVERY)
    wall, cpu = time.monotonic() - t0, cpu_seconds() - cpu0
    for s in sources:
        s.close()
    latencies.sort()

    def pick(q: float) -> float:
        return latencies[min(len(latencies) - 1, int(q * len(latencies)))] if latencies else float("nan")

    return {
        "cpu_pct": 100 * cpu / wall,
        "rss_mib": rss_kib() / 1024,
        "lines_per_s": lines / wall,
        "p50_ms": 1000 * pick(0.5),
        "p99_ms": 1000 * pick(0.99),
        "max_ms": 1000 * (latencies[-1] if latencies else float("nan")),
    }


def run_child(mode: str, spec: dict[str, Any], seconds: float) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, __file__, "--child", mode, "--spec", json.dumps(spec), "--seconds", str(seconds)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return dict(json.loads(out.strip().splitlines()[-1]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=50)
    ap.add_argument("--hosts", type=int, default=5, help="loopback addresses (one connection each)")
    ap.add_argument("--seconds", type=float, default=20.0, help="measured window per mode")
    ap.add_argument("--child")
    ap.add_argument("--spec")
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child, json.loads(args.spec), args.seconds)))
        return
    from tests.support.sshd import SSHServer, free_port

    with tempfile.TemporaryDirectory(prefix="ssh-fanout-") as tmp:
        hosts = tuple(f"127.0.0.{i + 1}" for i in range(args.hosts))
        server = SSHServer(Path(tmp) / "sshd", free_port(), listen=hosts)
        files = [str(Path(tmp) / f"gpu{i:02d}.log") for i in range(args.files)]
        for f in files:
            Path(f).touch()
        spec = {"files": files, "hosts": hosts, "port": server.port, "known_hosts": str(server.known_hosts)}
        spec["key"] = str(server.client_key)
        server.start()
        w = subprocess.Popen([sys.executable, __file__, "--child", "writer", "--spec", json.dumps(files)])
        try:
            results = {mode: run_child(mode, spec, args.seconds) for mode in ("ssh", "local")}
        finally:
            w.kill()
            server.stop()
    report(results, args)


def report(results: dict[str, dict[str, float]], args: argparse.Namespace) -> None:
    print(f"{args.files} files, 1 line/s each, {args.hosts} loopback hosts, {args.seconds:.0f}s window")
    keys = ["cpu_pct", "rss_mib", "lines_per_s", "p50_ms", "p99_ms", "max_ms"]
    print(f"{'mode':<8}" + "".join(f"{k:>12}" for k in keys))
    for mode, r in results.items():
        print(f"{mode:<8}" + "".join(f"{r[k]:>12.2f}" for k in keys))
    ssh, local = results["ssh"], results["local"]
    print(
        "ssh/local ratios: "
        + ", ".join(f"{k} {ssh[k] / local[k]:.2f}x" for k in ("cpu_pct", "rss_mib") if local[k] > 0)
    )


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1:3] == ["--child", "writer"]:
        writer(json.loads(sys.argv[4]), 3600)
    else:
        main()
