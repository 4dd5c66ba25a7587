"""Container line decoding speed: plain passthrough vs CRI vs Docker json-file.

Builds ~200k production-like SGLang lines with ``acceptmon.testing.synth``
(startups with an ~18 KB ``server_args`` line, Decode/Prefill/access traffic),
wraps them as kubelet CRI lines (long lines split into 16 KiB ``P``/``F``
pieces) and as json-file records (16 KiB pieces without the trailing
newline), and times ``Decoder.feed`` over 1000-line batches, then
``ContainerSplitter.feed`` over 1 MiB reads of the files' bytes (what every
reader does; plain against ``LineSplitter`` alone: its extra cost). Prints
lines/s and each format's cost as a ratio against plain, measured in the same
process (read the ratios, not the seconds).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from acceptmon.sources.container.lines import Decoder
from acceptmon.sources.container.splitter import ContainerSplitter
from acceptmon.sources.lines import READ_SIZE, LineSplitter
from acceptmon.testing import synth

PIECE = 16 * 1024
BATCH = 1000


def engine_lines(count: int) -> list[str]:
    rng = random.Random(7)
    ts = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    out: list[str] = []
    seed = 0
    while len(out) < count:
        seed += 1
        out += synth.startup(ts, seed, cuda_graph_bs=list(range(1, 3100)))
        out += synth.traffic(rng, ts + timedelta(minutes=1), 20_000, 2.6)
        out += synth.shutdown(ts + timedelta(hours=12))
        ts += timedelta(hours=13)
    return out[:count]


def stamp(i: int) -> str:
    return f"2026-11-30T12:{i // 60000 % 60:02d}:{i // 1000 % 60:02d}.{i % 1000:03d}456789+00:00"


def as_cri(lines: list[str]) -> list[str]:
    out = []
    for i, line in enumerate(lines):
        when = stamp(i)
        pieces = [line[j : j + PIECE] for j in range(0, len(line), PIECE)] or [""]
        out += [f"{when} stderr P {p}" for p in pieces[:-1]]
        out.append(f"{when} stderr F {pieces[-1]}")
    return out


def as_json_file(lines: list[str]) -> list[str]:
    out = []
    for line in lines:
        pieces = [line[j : j + PIECE] for j in range(0, len(line), PIECE)] or [""]
        ends = [""] * (len(pieces) - 1) + ["\n"]
        for piece, end in zip(pieces, ends, strict=True):
            record = {"log": piece + end, "stream": "stderr", "time": "2026-11-30T12:00:01.123456789Z"}
            out.append(json.dumps(record, separators=(",", ":")))
    return out


def rate(raw: list[str], expect: list[str], repeat: int) -> float:
    """Best lines/s (engine lines out) over ``repeat`` runs; checks the output."""
    batches = [raw[i : i + BATCH] for i in range(0, len(raw), BATCH)]
    best = float("inf")
    for _ in range(repeat):
        decoder = Decoder()
        got: list[str] = []
        start = time.perf_counter()
        for batch in batches:
            got += decoder.feed(batch).texts
        best = min(best, time.perf_counter() - start)
        if got != expect or any(decoder.errors.values()):
            raise SystemExit(f"decoded output differs ({decoder.errors})")
    return len(expect) / best


def rate_bytes(
    data: bytes, expect: list[str], repeat: int, splitter: type[LineSplitter | ContainerSplitter]
) -> float:
    """Best lines/s of ``splitter`` over ``data`` read 1 MiB at a time; checks the output."""
    best = float("inf")
    for _ in range(repeat):
        sp = splitter()
        got: list[str] = []
        start = time.perf_counter()
        for i in range(0, len(data), READ_SIZE):
            got += sp.feed(data[i : i + READ_SIZE])[0]
        best = min(best, time.perf_counter() - start)
        if got != expect:
            raise SystemExit(f"{splitter.__name__}: output differs")
    return len(expect) / best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    lines = engine_lines(args.lines)
    plain = rate(lines, lines, args.repeat)
    print(f"{len(lines)} engine lines, {sum(len(s) > PIECE for s in lines)} over 16 KiB")
    print(f"{'plain':10} {plain:>14,.0f} lines/s")
    for name, raw in (("cri", as_cri(lines)), ("json-file", as_json_file(lines))):
        speed = rate(raw, lines, args.repeat)
        print(
            f"{name:10} {speed:>14,.0f} lines/s  {1e6 / speed:.2f} µs/line  plain/{name} = {plain / speed:,.0f}x"
        )
    print("bytes → lines (1 MiB reads):")
    base = rate_bytes(("\n".join(lines) + "\n").encode(), lines, args.repeat, LineSplitter)
    print(f"{'LineSplitter plain':28} {base:>14,.0f} lines/s")
    for name, raw in (("plain", lines), ("cri", as_cri(lines)), ("json-file", as_json_file(lines))):
        speed = rate_bytes(("\n".join(raw) + "\n").encode(), lines, args.repeat, ContainerSplitter)
        print(
            f"{'ContainerSplitter ' + name:28} {speed:>14,.0f} lines/s  LineSplitter/this = {base / speed:.2f}x"
        )


if __name__ == "__main__":
    main()
