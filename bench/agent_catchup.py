"""Agent catch-up next to mtail one-shot on the same backlog, in one run.

A new agent on a big existing log reads it from the start. This times a real
``acceptmon run`` from its start until ``/metrics`` shows every Decode line of
the log counted, and ``mtail --one_shot`` (with the Decode program of
``parse_throughput``) over the same file; each is run ``--repeat`` times and
the medians compared. The agent's time includes its start-up, the HTTP
scrapes (every 50 ms) and its checkpoints, as a deployment would see them.

    .venv/bin/python bench/agent_catchup.py [--lines 1000000] [--repeat 3] [--log PATH]

Target: the agent's lines/s ≥ 3× mtail one-shot's. Shared machines are noisy:
read the ratio, not the seconds. Runs whichever acceptmon ``sys.executable``
belongs to (``/work/main/.venv/bin/python bench/agent_catchup.py`` times main).
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bytecode import compile_acceptmon
from bench.gen_log import generate
from bench.live_latency import free_port, metric
from bench.parse_throughput import MTAIL_PROGRAM, timed


def decode_count(log: Path) -> int:
    """Decode lines in the log (the bench log holds only valid ones)."""
    with log.open("rb") as f:
        return sum(chunk.count(b"Decode batch") for chunk in iter(lambda: f.read(1 << 24), b""))


def agent_once(acceptmon: str, log: Path, expected: int, timeout: float) -> float:
    """Seconds from ``acceptmon run`` starting (fresh state) until /metrics counts ``expected``."""
    with tempfile.TemporaryDirectory(prefix="acceptmon-catchup-") as d:
        port = free_port()
        cmd = [acceptmon, "run", "--listen", f"127.0.0.1:{port}", "--state-dir", d, str(log)]
        name = f'acceptmon_decode_batches_total{{engine="sglang",source="{log}"}}'  # the engine label sorts first
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            while (metric(port, name) or 0.0) < expected:
                if proc.poll() is not None:
                    raise SystemExit(f"acceptmon run exited with {proc.returncode}")
                if time.perf_counter() - start > timeout:
                    raise SystemExit(f"timed out after {timeout:.0f}s")
                time.sleep(0.05)  # the scrape interval
            return time.perf_counter() - start
        finally:
            proc.terminate()
            proc.wait(timeout=30)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--log", help="use (or write) the log here")
    ap.add_argument("--timeout", type=float, default=600)
    args = ap.parse_args()
    compile_acceptmon()
    print("$", shlex.join([sys.executable, *sys.argv]))
    work = Path(tempfile.mkdtemp(prefix="acceptmon-bench-"))
    try:
        log = Path(args.log) if args.log else work / "big.log"
        if not log.exists():
            generate(str(log), args.lines)
        lines = sum(1 for _ in log.open("rb"))
        expected = decode_count(log)
        acceptmon = str(Path(sys.executable).with_name("acceptmon"))
        progs = work / "mtail"
        progs.mkdir()
        (progs / "accept.mtail").write_text(MTAIL_PROGRAM)
        mtail = ["mtail", "--one_shot", "--progs", str(progs), "--logs", str(log)]
        agent_s, mtail_s = [], []
        for _ in range(args.repeat):  # interleaved: both see the same machine load
            agent_s.append(agent_once(acceptmon, log, expected, args.timeout))
            if shutil.which("mtail"):
                mtail_s.append(timed(mtail)[0])
        a = statistics.median(agent_s)
        print(f"log: {lines:,} lines, {expected:,} Decode; median of {args.repeat} runs each")
        print(f"acceptmon run catch-up {a:8.2f} s {lines / a:12,.0f} lines/s  ({acceptmon})")
        if mtail_s:
            m = statistics.median(mtail_s)
            print(f"mtail --one_shot       {m:8.2f} s {lines / m:12,.0f} lines/s")
            print(f"ratio: agent catch-up reads {m / a:.2f}x mtail one-shot's lines/s (target >= 3x)")
        else:
            print("mtail not installed (Debian package mtail): no ratio", file=sys.stderr)
    finally:
        shutil.rmtree(work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
