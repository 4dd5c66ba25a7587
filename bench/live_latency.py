"""The live agent next to mtail on one log: latency to /metrics, idle CPU, RSS and throughput.

Both tail the same file in the same run, each with its default settings
(mtail: fsnotify plus 250 ms polling; acceptmon: 500 ms polling, events for
files that come, go or move but none for appends, and a catch-up on every
scrape: /metrics first reads every line written before the request), and are
measured from outside:

(a) append → visible: write one Decode line with a fresh ``#running-req`` and
    poll each /metrics as fast as it answers until it shows that value;
    median and p95 over ``--samples`` lines. The time includes one scrape,
    and for acceptmon that scrape's catch-up: it is the latency of a scrape
    of fresh data, whatever the poll interval;
(b) CPU at 10 lines/s: utime+stime from /proc/PID/stat over ``--seconds``,
    one line every 100 ms and no scrapes meanwhile (so acceptmon reads at its
    poll interval alone: this is the cost of the default ``poll_interval``,
    and a Prometheus scrape every 15 s adds one small pass each); then the
    same during an incident: the server restarts with another draft model
    whose acceptance is lower, lines go on at 10/s until acceptmon's
    ``acceptmon_finding_active`` shows a finding firing, and the CPU is
    measured again over ``--seconds`` while it stays open (the detector's
    recovery checks run on every line then);
(c) RSS and lines/s over ``--lines`` Decode lines appended 1M at a time, in
    100k-line writes, each million as soon as both have counted the last;
    RSS (VmRSS) sampled after every million.

    .venv/bin/python bench/live_latency.py [--samples 100] [--seconds 30] [--lines 10000000]

Targets for acceptmon: (a) median ≤ 50 ms, (b) ≤ 0.5% of a core, quiet and firing,
(c) ≤ 60 MB and flat. Shared machines are noisy: read the ratios.
"""

from __future__ import annotations

import argparse
import os
import random
import shlex
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from acceptmon.testing import synth
from bench.parse_throughput import MTAIL_PROGRAM

ROOT = Path(__file__).resolve().parents[1]
STEP = 1_000_000
BLOCK = 100_000
TICK = os.sysconf("SC_CLK_TCK")


def scrape(port: int) -> str | None:
    """The /metrics text at ``port``; None while nothing answers."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            return str(r.read().decode())
    except OSError:
        return None


def metric(port: int, name: str) -> float | None:
    """The first sample of ``name`` on a /metrics at ``port``; None while nothing answers."""
    text = scrape(port)
    if text is None:
        return None
    for line in text.splitlines():
        if line.startswith((name + "{", name + " ")):
            return float(line.rpartition(" ")[2])
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Tool:
    """One tailer under test, seen only through its /metrics and /proc."""

    name: str
    cmd: list[str]
    port: int
    decode_metric: str
    running_metric: str
    proc: subprocess.Popen[bytes] | None = None
    latencies: list[float] = field(default_factory=list)
    rss_mb: list[float] = field(default_factory=list)
    busy_s: float = 0.0
    incident_s: float = 0.0

    def start(self, log: Path) -> None:
        self.proc = subprocess.Popen(self.cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=log.open("ab"))

    def metric(self, name: str) -> float | None:
        return metric(self.port, name)

    def cpu_s(self) -> float:
        assert self.proc is not None
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICK

    def rss(self) -> float:
        assert self.proc is not None
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def make_tools(tmp: Path, log: Path) -> list[Tool]:
    progs = tmp / "progs"
    progs.mkdir()
    (progs / "acceptmon.mtail").write_text(MTAIL_PROGRAM)
    ours, theirs = free_port(), free_port()
    agent = [sys.executable, "-m", "acceptmon", "run", "--listen", f"127.0.0.1:{ours}"]
    agent += ["--state-dir", str(tmp / "state"), str(log)]
    mtail = [
        "mtail",
        "--progs",
        str(progs),
        "--logs",
        str(log),
        "--address",
        "127.0.0.1",
        "--port",
        str(theirs),
    ]
    label = f'{{engine="sglang",source="{log}"}}'  # the engine label sorts first
    return [
        Tool(
            "acceptmon",
            agent,
            ours,
            "acceptmon_decode_batches_total" + label,
            "acceptmon_running_requests" + label,
        ),
        Tool("mtail", mtail, theirs, "decode_batches", "running_requests"),
    ]


def wait_until(what: str, check: Callable[[], bool], timeout: float) -> float:
    """Poll ``check`` until true; return when it became true (perf_counter)."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.01)
    return time.perf_counter()


def decode(running: int, accept_len: float = 2.5) -> bytes:
    return (synth.decode_line(datetime.now(), accept_len, running) + "\n").encode()


def latency(tools: list[Tool], fd: int, samples: int, rng: random.Random) -> None:
    """(a) append → visible, polled concurrently on both tools."""

    def seen(tool: Tool, value: int) -> float:
        return wait_until(
            f"{tool.name} to show {value}", lambda: tool.metric(tool.running_metric) == value, 10
        )

    with ThreadPoolExecutor(len(tools)) as pool:
        for i in range(samples):
            value = 1000 + i
            futures = [pool.submit(seen, t, value) for t in tools]
            written = time.perf_counter()
            os.write(fd, decode(value))
            for tool, fut in zip(tools, futures, strict=True):
                tool.latencies.append(fut.result() - written)
            time.sleep(rng.uniform(0.02, 0.08))  # spacing: no phase lock with pollers


def idle_cpu(tools: list[Tool], fd: int, seconds: float) -> None:
    """(b) CPU while one line arrives every 100 ms; nobody scrapes meanwhile."""
    time.sleep(2.0)  # let (a)'s scrapes and the last checkpoint pass
    before = [t.cpu_s() for t in tools]
    start = time.monotonic()
    n = 0
    while (now := time.monotonic()) - start < seconds:
        os.write(fd, decode(10 + n % 30))
        n += 1
        time.sleep(max(0.0, start + n * 0.1 - now))  # pacing the workload
    wall = time.monotonic() - start
    for tool, cpu in zip(tools, before, strict=True):
        tool.busy_s = (tool.cpu_s() - cpu) / wall


def firing(port: int) -> str | None:
    """The rule of a finding firing on acceptmon's /metrics, else None."""
    text = scrape(port)
    if text is None:
        return None
    for line in text.splitlines():
        if line.startswith("acceptmon_finding_active{") and line.rpartition(" ")[2] in ("1", "1.0"):
            return line.partition('rule="')[2].partition('"')[0]
    return None


def incident_cpu(tools: list[Tool], fd: int, seconds: float) -> str:
    """(b) again while a drop is firing: a restart with another draft model whose accept
    length is lower, lines at 10/s until the finding fires, then the CPU window."""
    os.write(fd, "".join(f"{line}\n" for line in synth.shutdown(datetime.now())).encode())
    new_draft = {"speculative_draft_model_path": "/models/other-draft"}
    os.write(fd, "".join(f"{ln}\n" for ln in synth.startup(datetime.now(), 2, **new_draft)).encode())
    ours = tools[0]
    deadline = time.monotonic() + 300
    n = 0
    rule = None
    while rule is None:
        if time.monotonic() > deadline:
            raise SystemExit("timed out waiting for acceptmon to fire a finding")
        os.write(fd, decode(10 + n % 30, 1.6))
        n += 1
        time.sleep(0.1)
        if n % 10 == 0:
            rule = firing(ours.port)
    before = [t.cpu_s() for t in tools]
    start = time.monotonic()
    n = 0
    while (now := time.monotonic()) - start < seconds:
        os.write(fd, decode(10 + n % 30, 1.6))
        n += 1
        time.sleep(max(0.0, start + n * 0.1 - now))  # pacing the workload
    wall = time.monotonic() - start
    for tool, cpu in zip(tools, before, strict=True):
        tool.incident_s = (tool.cpu_s() - cpu) / wall
    still = firing(ours.port)
    if still is None:
        raise SystemExit("the finding resolved during the window: the incident figure is not one")
    return still


def block_of_lines(rng: random.Random) -> bytes:
    lens = (1.5, 1.75, 2.0, 2.25, 2.5, 2.75, 3.0)
    return b"".join(decode(rng.randint(1, 48), rng.choice(lens)) for _ in range(BLOCK))


def until_counted(tools: list[Tool], targets: dict[str, float], timeout: float = 900) -> dict[str, float]:
    """When (perf_counter) each tool's Decode counter reached its target, polled side by side."""
    reached: dict[str, float] = {}
    deadline = time.monotonic() + timeout
    while len(reached) < len(tools):
        for t in tools:
            if t.name not in reached and (t.metric(t.decode_metric) or 0.0) >= targets[t.name]:
                reached[t.name] = time.perf_counter()
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out: only {sorted(reached)} counted {targets}")
        time.sleep(0.05)  # polling interval
    return reached


def bulk(tools: list[Tool], fd: int, lines: int, rng: random.Random) -> dict[str, float]:
    """(c) millions of lines as fast as both count them; RSS after each million; lines/s each."""
    block = block_of_lines(rng)
    base = {t.name: t.metric(t.decode_metric) or 0.0 for t in tools}
    busy = dict.fromkeys(base, 0.0)
    for step in range(1, lines // STEP + 1):
        began = time.perf_counter()
        for _ in range(STEP // BLOCK):
            assert os.write(fd, block) == len(block)
        reached = until_counted(tools, {name: n + step * STEP for name, n in base.items()})
        for t in tools:
            busy[t.name] += reached[t.name] - began
            t.rss_mb.append(t.rss())
        print(
            f"  {step * STEP:>11,} lines: " + "  ".join(f"{t.name} {t.rss_mb[-1]:6.1f} MB" for t in tools),
            flush=True,
        )
    return {name: (lines // STEP * STEP) / s for name, s in busy.items()}


def pct(values: list[float], q: float) -> float:
    return (
        statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1] if len(values) > 1 else values[0]
    )


def ratio(a: float, b: float) -> str:
    """Only between positive figures: a ratio of two near-zero growths says nothing."""
    return f"{a / b:.2f}x" if a > 0 and b > 0 else "-"


def report(tools: list[Tool], rates: dict[str, float]) -> None:
    ours, theirs = tools
    rows: list[tuple[str, Callable[[Tool], float], str]] = [
        ("append->visible median (ms)", lambda t: 1000 * statistics.median(t.latencies), "<= 50"),
        ("append->visible p95 (ms)", lambda t: 1000 * pct(t.latencies, 95), ""),
        ("CPU at 10 lines/s (% of a core)", lambda t: 100 * t.busy_s, "<= 0.5"),
        ("CPU at 10 lines/s, drop firing (%)", lambda t: 100 * t.incident_s, "<= 0.5"),
        ("RSS after the last million (MB)", lambda t: t.rss_mb[-1], "<= 60"),
        ("RSS growth first->last million (MB)", lambda t: t.rss_mb[-1] - t.rss_mb[0], "~0 (flat)"),
        ("bulk lines/s", lambda t: rates[t.name], ""),
    ]
    print(f"\n{'':38}{'acceptmon':>12}{'mtail':>12}{'ratio':>10}  target (acceptmon)")
    for label, get, target in rows:
        a, b = get(ours), get(theirs)
        print(f"{label:38}{a:12.2f}{b:12.2f}{ratio(a, b):>10}  {target}")
    for t in tools:
        print(f"RSS per million, {t.name}: " + " ".join(f"{v:.1f}" for v in t.rss_mb))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=100, help="lines timed append -> visible")
    ap.add_argument("--seconds", type=float, default=30.0, help="CPU window at 10 lines/s")
    ap.add_argument("--lines", type=int, default=10_000_000, help="bulk lines (multiple of 1M)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    print("$", shlex.join([sys.executable, *sys.argv]))
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="acceptmon-live-") as d:
        tmp = Path(d)
        log = tmp / "server.log"
        log.touch()
        tools = make_tools(tmp, log)
        try:
            for t in tools:
                print("$", shlex.join(t.cmd))
                t.start(tmp / f"{t.name}.err")
            for t in tools:
                wait_until(f"{t.name} to serve /metrics", partial(_answers, t.port), 30)
            return _measure(tools, log, args, rng)
        finally:
            for t in tools:
                t.stop()


def _answers(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2):
            return True
    except OSError:
        return False


def _measure(tools: list[Tool], log: Path, args: argparse.Namespace, rng: random.Random) -> int:
    fd = os.open(log, os.O_WRONLY | os.O_APPEND)
    try:
        start = datetime.now()
        os.write(fd, "".join(f"{line}\n" for line in synth.startup(start, 1)).encode())
        print(f"(a) {args.samples} lines, append -> visible ...", flush=True)
        latency(tools, fd, args.samples, rng)
        print(f"(b) {args.seconds:.0f} s at 10 lines/s ...", flush=True)
        idle_cpu(tools, fd, args.seconds)
        print(f"(b) {args.seconds:.0f} s at 10 lines/s while a drop is firing ...", flush=True)
        print(f"    firing: {incident_cpu(tools, fd, args.seconds)}", flush=True)
        print(f"(c) {args.lines:,} lines in bulk ...", flush=True)
        rates = bulk(tools, fd, args.lines, rng)
    finally:
        os.close(fd)
    report(tools, rates)
    return 0


if __name__ == "__main__":
    sys.exit(main())
