"""Format-exact synthetic lines for runs without SGLang's ``server_args``: vLLM starts and
spec lines, and SGLang's changes under a running server (weight updates, overrides).

vLLM lines are v1 (2025-05 … 2025-09: ``SpecDecoding metrics: … Per-position acceptance
rate: …``) from the API server, with v1's ``non-default args`` start line or v0's engine
config line; SGLang lines are 0.5.19+ like ``synth``.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

from acceptmon.testing.synth import stamp

VLLM_ARGS: dict[str, Any] = {
    "model_tag": "meta-llama/Llama-3.1-8B-Instruct",
    "model": "meta-llama/Llama-3.1-8B-Instruct",
    "max_model_len": 16384,
    "speculative_config": {
        "method": "eagle3",
        "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
        "num_speculative_tokens": 3,
    },
}


def vstamp(ts: datetime) -> str:
    return ts.strftime("%m-%d %H:%M:%S")


def non_default_args_line(ts: datetime, **overrides: Any) -> str:
    args = {**VLLM_ARGS, **overrides}
    return f"(APIServer pid=7) INFO {vstamp(ts)} [utils.py:326] non-default args: {args!r}"


def engine_config_line(ts: datetime, draft: str, k: int, version: str = "0.6.3") -> str:
    """v0's ``Initializing an LLM engine (vX) with config: …)``."""
    spec = f"SpeculativeConfig(draft_model={draft!r}, num_spec_tokens={k})"
    return (
        f"INFO {vstamp(ts)} llm_engine.py:237] Initializing an LLM engine (v{version}) with config: "
        f"model='meta-llama/Meta-Llama-3-8B-Instruct', speculative_config={spec}, "
        "tokenizer='meta-llama/Meta-Llama-3-8B-Instruct', skip_tokenizer_init=False, tokenizer_mode=auto, "
        "revision=None, dtype=torch.bfloat16, max_seq_len=8192, download_dir=None, load_format=LoadFormat.AUTO, "
        "tensor_parallel_size=1, device_config=cuda, "
        "decoding_config=DecodingConfig(guided_decoding_backend='outlines'), seed=0, "
        "served_model_name=meta-llama/Meta-Llama-3-8B-Instruct, enable_prefix_caching=False, "
        "mm_processor_kwargs=None)"
    )


def spec_line(ts: datetime, per_position: list[float], drafts: int = 400) -> str:
    """One v1 interval: ``drafts`` drafts of ``len(per_position)`` tokens each."""
    k = len(per_position)
    accepted = sum(round(p * drafts) for p in per_position)
    drafted = drafts * k
    return (
        f"(APIServer pid=7) INFO {vstamp(ts)} [loggers.py:123] SpecDecoding metrics: "
        f"Draft acceptance rate: {100 * accepted / drafted:.1f}%, "
        f"Mean acceptance length: {1 + accepted / drafts:.2f}, Accepted: {accepted} tokens, "
        f"Drafted: {drafted} tokens, Per-position acceptance rate: "
        + ", ".join(f"{p:.3f}" for p in per_position)
    )


def vllm_traffic(
    rng: random.Random, start: datetime, intervals: int, per_position: list[float], spread: float = 0.03
) -> Iterator[str]:
    """v1 spec lines every 10 s around ``per_position``."""
    ts = start
    for _ in range(intervals):
        ts += timedelta(seconds=10)
        pos = [max(0.0, min(1.0, rng.gauss(p, spread))) for p in per_position]
        # A later position never beats an earlier one.
        pos = [min(p, pos[i - 1]) if i else p for i, p in enumerate(pos)]
        yield spec_line(ts, pos, rng.choice((300, 400, 500)))


def weight_update(ts: datetime, ranks: tuple[str, ...] = (" TP0", " TP1")) -> list[str]:
    """SGLang's online weight update from disk: begin and end on every TP rank."""
    begin = [
        f"[{stamp(ts)}{r}] Update engine weights online from disk begin. avail mem=31.20 GB" for r in ranks
    ]
    end = [f"[{stamp(ts + timedelta(seconds=4))}{r}] Update weights end." for r in ranks]
    return begin + end


def context_override(ts: datetime, rank: str = " TP0", **values: Any) -> str:
    return f"[{stamp(ts)}{rank}] Config updated via context override: {values!r}"
