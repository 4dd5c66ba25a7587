"""Write a large realistic SGLang log for benchmarks (deterministic)."""

from __future__ import annotations

import argparse
import random
from datetime import datetime, timedelta

from acceptmon.testing import synth


def generate(path: str, lines: int, seed: int = 1) -> int:
    """~50% Decode, the rest Prefill, HTTP access lines and noise, and half-way a restart with
    another draft model after which acceptance drops (2.4 → 1.6); returns bytes written."""
    rng = random.Random(seed)
    ts = datetime(2026, 11, 30, 0, 0, 0)
    noise = (
        '[{t}] INFO:     127.0.0.1:{p} - "GET /health HTTP/1.1" 200 OK',
        "NCCL INFO Channel 00/0{p} : 0[0] -> 1[1] via P2P/IPC",
        "[{t} TP0] Cache flushed successfully!",
        "[{t}] Receive: obj=GenerateReqInput(rid='{p}', text=None, input_ids=None)",
    )
    written = 0
    with open(path, "w") as out:
        out.write(synth.server_args_line(ts, random_seed=seed) + "\n")
        buf: list[str] = []
        level = 2.4
        for i in range(lines - 1):
            if i % 7 == 0:
                ts += timedelta(seconds=1)
            if i == lines // 2:
                buf += synth.shutdown(ts)
                ts += timedelta(seconds=30)
                buf += synth.startup(ts, seed + 1, speculative_draft_model_path="/models/other-draft")
                level = 1.6
            r = rng.random()
            if r < 0.5:
                value = min(4.0, max(1.0, rng.gauss(level, 0.35)))
                buf.append(synth.decode_line(ts, value, rng.randrange(1, 64)))
            elif r < 0.62:
                buf.append(synth.prefill_line(ts, rng.randrange(16, 8192), rng.randrange(0, 64)))
            elif r < 0.85:
                buf.append(synth.access_line(ts, rng.randrange(30000, 60000)))
            else:
                t = synth.stamp(ts)
                buf.append(rng.choice(noise).format(t=t, p=rng.randrange(10000)))
            if len(buf) >= 10000:
                text = "\n".join(buf) + "\n"
                out.write(text)
                written += len(text)
                buf.clear()
        text = "\n".join(buf) + ("\n" if buf else "")
        out.write(text)
        written += len(text)
    return written


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("path")
    ap.add_argument("--lines", type=int, default=1_000_000)
    a = ap.parse_args()
    print(generate(a.path, a.lines))
