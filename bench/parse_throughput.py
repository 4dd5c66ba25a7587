"""One-shot parse throughput against grep and mtail on the same file, in one run.

Generates a realistic 1M-line SGLang log (half Decode lines, the rest Prefill,
HTTP access lines and noise), then times ``acceptmon oneshot``, ``grep -c
'accept len'`` and ``mtail --one_shot`` with a program extracting the same
Decode fields. Prints each tool's median wall time over ``--repeat`` runs,
lines/s, MB/s, CPU seconds and peak RSS, and the ratios that matter (on wall time).
acceptmon sorts a large file's lines in a second process where a core is free
(``ingest/scout.py``) and mtail runs several threads, so CPU time is shown beside:
a tool's CPU above its wall time used more than one core. acceptmon's bytecode is
compiled first, as an install compiles it (``bench/bytecode.py``). Timings on shared
machines are noisy: read the ratios, not the seconds.
"""

from __future__ import annotations

import argparse
import os
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

MTAIL_PROGRAM = r"""
counter decode_batches
counter prefill_batches
counter accept_len_sum
counter verify_rounds
gauge accept_len
gauge accept_rate
gauge running_requests
/Decode batch.*#running-req: (?P<running>\d+).*accept len: (?P<al>\d+\.\d+), accept rate: (?P<ar>\d+\.\d+).*gen throughput \(token\/s\): (?P<thr>\d+\.\d+), #queue-req: (?P<q>\d+)/ {
  decode_batches++
  accept_len = $al
  accept_rate = $ar
  running_requests = $running
  accept_len_sum += $al
  verify_rounds += $running
}
/Prefill batch/ {
  prefill_batches++
}
"""


def timed(cmd: list[str]) -> tuple[float, int, bytes, float]:
    """Wall seconds, peak RSS in KiB (of the largest of that child and its own children),
    stdout, and CPU seconds (its children's included)."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
        out.seek(0)
        data = out.read()
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"{cmd[0]} failed with status {status}")
    return elapsed, usage.ru_maxrss, data, usage.ru_utime + usage.ru_stime


def measure(
    tools: list[tuple[str, list[str]]], repeat: int
) -> dict[str, list[tuple[float, int, bytes, float]]]:
    """Each tool ``repeat`` times, round by round (interleaved: a change in the machine's
    load hits every tool alike, not whichever ran last)."""
    runs: dict[str, list[tuple[float, int, bytes, float]]] = {name: [] for name, _ in tools}
    for _ in range(repeat):
        for name, cmd in tools:
            runs[name].append(timed(cmd))
    return runs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", help="write the generated log here and keep it")
    args = ap.parse_args()
    compile_acceptmon()
    work = Path(tempfile.mkdtemp(prefix="acceptmon-bench-"))
    log = Path(args.keep) if args.keep else work / "big.log"
    size = generate(str(log), args.lines) if not log.exists() else log.stat().st_size
    prog_dir = work / "mtail"
    prog_dir.mkdir()
    (prog_dir / "accept.mtail").write_text(MTAIL_PROGRAM)
    acceptmon = shutil.which("acceptmon") or str(Path(sys.executable).with_name("acceptmon"))
    tools = [
        ("acceptmon oneshot", [acceptmon, "oneshot", str(log)]),
        ("grep -c", ["grep", "-c", "accept len", str(log)]),
    ]
    if shutil.which("mtail"):
        tools.append(
            ("mtail --one_shot", ["mtail", "--one_shot", "--progs", str(prog_dir), "--logs", str(log)])
        )
    else:
        print("mtail not installed (Debian package mtail): its column is missing", file=sys.stderr)
    runs = measure(tools, args.repeat)
    seconds = {name: [r[0] for r in rs] for name, rs in runs.items()}
    mb = size / 1e6
    print(f"log: {args.lines:,} lines, {mb:.0f} MB; median of {args.repeat} interleaved runs each")
    print(f"{'tool':<20}{'seconds':>9}{'lines/s':>14}{'MB/s':>9}{'CPU s':>8}{'peak RSS MB':>13}")
    for name, rs in runs.items():
        s = statistics.median(seconds[name])
        cpu = statistics.median(r[3] for r in rs)
        rss = max(r[1] for r in rs) / 1024
        print(f"{name:<20}{s:>9.2f}{args.lines / s:>14,.0f}{mb / s:>9.1f}{cpu:>8.2f}{rss:>13.1f}")
    ours = seconds["acceptmon oneshot"]

    def ratios(name: str, theirs_over_ours: bool) -> str:
        """Median of the per-round ratios, and their spread."""
        per = [t / o if theirs_over_ours else o / t for o, t in zip(ours, seconds[name], strict=True)]
        return f"{statistics.median(per):.1f}x (rounds {min(per):.1f}-{max(per):.1f})"

    print(f"ratio: acceptmon takes {ratios('grep -c', False)} grep -c's time (target <= 15x)")
    if "mtail --one_shot" in runs:
        print(f"ratio: acceptmon is {ratios('mtail --one_shot', True)} faster than mtail (target >= 5x)")
    rss = max(r[1] for r in runs["acceptmon oneshot"]) / 1024
    print(f"peak RSS: acceptmon {rss:.0f} MB (target <= 60 MB)")
    shutil.rmtree(work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
