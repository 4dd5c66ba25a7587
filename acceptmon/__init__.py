"""acceptmon: watch speculative-decoding acceptance in SGLang and vLLM logs.

``acceptmon.read_log`` and ``acceptmon.read_runs`` give the acceptance of logs
as pandas DataFrames (see ``acceptmon.frames``); they are imported on first
use, so the agent never loads pandas.
"""

from typing import Any

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name in ("read_log", "read_runs"):
        from acceptmon import frames

        return getattr(frames, name)
    raise AttributeError(f"module 'acceptmon' has no attribute {name!r}")
