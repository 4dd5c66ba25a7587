"""Which inference server writes a log, known before its first series is exported.

``engine`` is a label of every per-source series. Learnt only from acceptance
lines, it was empty until the first one and ``sglang`` after: two series for one
log, one a counter stuck at 0. So a start line names the engine too (its
arguments say which server printed them), and while a source's engine is unknown
its lines are looked through for the first line only one engine writes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from acceptmon.parse import llamacpp, sglang, vllm
from acceptmon.parse.markers import LMDEPLOY as LMDEPLOY_LINE
from acceptmon.runs import LLAMACPP_ARGS

#: Values of the ``engine`` label.
SGLANG, VLLM, LLAMACPP, LMDEPLOY = "sglang", "vllm", "llamacpp", "lmdeploy"
ENGINES = frozenset({SGLANG, VLLM, LLAMACPP, LMDEPLOY})

#: Message fragments only one engine prints (LMDeploy's stats line also holds vLLM's
#: ``SpecDecoding metrics:``, after its own fragment: the first fragment of a text decides).
_SIGNATURES: dict[str, tuple[str, ...]] = {
    SGLANG: (sglang.DECODE, sglang.PREFILL, "server_args=", "server_args:"),
    VLLM: (*vllm.MARKERS, *vllm.START_MARKERS),
    LLAMACPP: (llamacpp.MARKER, "initializing slots, n_slots"),
    LMDEPLOY: (LMDEPLOY_LINE,),
}
_OF = {text: engine for engine, texts in _SIGNATURES.items() for text in texts}
_ANY = re.compile("|".join(re.escape(t) for t in sorted(_OF, key=len, reverse=True)))


def sniff(lines: Iterable[str]) -> str:
    """The engine whose fragment comes first in ``lines``, or "" when none does."""
    m = _ANY.search("\n".join(lines))
    return "" if m is None else _OF[m.group(0)]


def of_start(args: dict[str, Any]) -> str:
    """The engine whose start line printed ``args`` (as ``runs.settings_from_args`` tells them), or ""."""
    if LLAMACPP_ARGS & args.keys():
        return LLAMACPP
    if "model_path" in args:
        return SGLANG
    if "model" in args or "speculative_config" in args or "vllm_version" in args:
        return VLLM
    return ""
