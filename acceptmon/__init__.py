"""acceptmon: watch speculative-decoding acceptance in SGLang, vLLM, llama.cpp and LMDeploy logs.

``acceptmon.read_log`` and ``acceptmon.read_runs`` give the acceptance of logs
as pandas DataFrames (see ``acceptmon.apps.frames``); they are imported on first
use, so the agent never loads pandas.
"""

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:  # the checker sees the real names; nothing else passes as an attribute
    from acceptmon.apps.frames import read_log as read_log
    from acceptmon.apps.frames import read_runs as read_runs
else:

    def __getattr__(name: str) -> Any:
        if name in ("read_log", "read_runs"):
            from acceptmon.apps import frames

            return getattr(frames, name)
        raise AttributeError(f"module 'acceptmon' has no attribute {name!r}")
