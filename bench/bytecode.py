"""acceptmon's bytecode compiled before anything is timed, as ``pip install`` compiles a wheel's.

A machine (or CI runner) that sets ``PYTHONDONTWRITEBYTECODE`` never caches an editable
install's bytecode, so every timed command would compile its ~80-150 modules from source
first: 0.1-0.2 s of each run that no installed copy pays, and more for the commands that
import more (backfill, report), which skews their ratios to ``oneshot``. Compiling once
here (``compileall`` writes the caches whatever that variable says) times what users run.
"""

from __future__ import annotations

import compileall
import importlib.util
from pathlib import Path


def compile_acceptmon() -> None:
    """Write the ``__pycache__`` of the acceptmon package being benchmarked (quietly; a
    read-only install keeps its own caches, and a failure here only costs the bench time)."""
    spec = importlib.util.find_spec("acceptmon")
    if spec is None or spec.origin is None:
        return
    compileall.compile_dir(str(Path(spec.origin).parent), quiet=2, workers=1)
