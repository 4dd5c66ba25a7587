"""Format-exact synthetic SGLang log lines (0.5.19+ shape).

Used to build the bundled demo log, the benchmark's large log and the
system tests' writers, so they all speak the format the parser is
checked against in ``../shared/samples``.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

BASE_ARGS: dict[str, Any] = {
    "model_path": "Qwen/Qwen3-32B",
    "tokenizer_path": "Qwen/Qwen3-32B",
    "served_model_name": "Qwen/Qwen3-32B",
    "tp_size": 2,
    "dp_size": 1,
    "random_seed": 0,
    "decode_log_interval": 40,
    "speculative_algorithm": "EAGLE3",
    "speculative_draft_model_path": "/models/Qwen3-32B-EAGLE3",
    "speculative_num_steps": 3,
    "speculative_eagle_topk": 1,
    "speculative_num_draft_tokens": 4,
    "speculative_accept_threshold_single": 1.0,
    "cuda_graph_max_bs": 48,
    "attention_backend": "fa3",
}


def stamp(ts: datetime) -> str:
    return ts.strftime("%Y-%m-%d %H:%M:%S")


def server_args_line(ts: datetime, **overrides: Any) -> str:
    args = {**BASE_ARGS, **overrides}
    return f"[{stamp(ts)}] server_args={args!r}"


def decode_line(
    ts: datetime,
    accept_len: float,
    running: int = 10,
    queue: int = 0,
    rank: str = " TP0",
    draft_tokens: int = 4,
) -> str:
    rate = (accept_len - 1.0) / (draft_tokens - 1)
    tokens = running * 1500
    return (
        f"[{stamp(ts)}{rank}] Decode batch, #running-req: {running}, #token: {tokens}, "
        f"token usage: {tokens / 348912:.2f}, accept len: {accept_len:.2f}, accept rate: {rate:.2f}, "
        f"cuda graph: True, gen throughput (token/s): {running * accept_len * 60:.2f}, #queue-req: {queue}"
    )


def prefill_line(ts: datetime, new_token: int, running: int, rank: str = " TP0") -> str:
    return (
        f"[{stamp(ts)}{rank}] Prefill batch, #new-seq: 1, #new-token: {new_token}, #cached-token: 0, "
        f"token usage: 0.04, #running-req: {running}, #queue-req: 0, #pending-token: 0, cuda graph: False, "
        f"input throughput (token/s): {new_token * 3.1:.2f}"
    )


def access_line(ts: datetime, port: int) -> str:
    return f'[{stamp(ts)}] INFO:     127.0.0.1:{port} - "POST /v1/chat/completions HTTP/1.1" 200 OK'


def startup(ts: datetime, seed: int, **overrides: Any) -> list[str]:
    return [
        server_args_line(ts, random_seed=seed, **overrides),
        f"[{stamp(ts + timedelta(seconds=5))} TP0] Load weight begin. avail mem=78.50 GB",
        f"[{stamp(ts + timedelta(seconds=21))} TP0] Load weight end. elapsed=1.84 s, "
        "type=LlamaForCausalLMEagle3, avail mem=46.30 GB, mem usage=1.58 GB.",
        f"[{stamp(ts + timedelta(seconds=44))}] INFO:     Started server process [2211]",
        prefill_line(ts + timedelta(seconds=45), 6, 0),
        f"[{stamp(ts + timedelta(seconds=45))}] The server is fired up and ready to roll!",
    ]


def shutdown(ts: datetime) -> list[str]:
    return [
        f"[{stamp(ts)}] SIGTERM received. signum=None frame=None. Draining requests and shutting down...",
        f"[{stamp(ts)}] Gracefully exiting... Remaining number of requests 0. Remaining requests remaining_rids=[].",
    ]


def traffic(
    rng: random.Random, start: datetime, intervals: int, level: float, spread: float = 0.12
) -> Iterator[str]:
    """Decode lines around ``level`` with load swings, prefills and access noise."""
    ts = start
    running = 8
    for i in range(intervals):
        ts += timedelta(seconds=rng.choice((1, 1, 2)))
        running = max(1, min(48, running + rng.choice((-2, -1, 0, 0, 1, 2))))
        value = max(1.0, min(4.0, rng.gauss(level, spread)))
        yield decode_line(ts, value, running)
        if i % 4 == 0:
            yield prefill_line(ts, rng.choice((512, 1024, 1873, 3795)), running)
            yield access_line(ts, 40000 + rng.randrange(20000))
