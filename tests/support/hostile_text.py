"""A log whose server_args carry terminal escapes, bidi overrides and rich markup in key names
and values, and a check that printed text holds none of them."""

from __future__ import annotations

import random
import re
from datetime import datetime, timedelta
from pathlib import Path

from acceptmon.testing import synth

#: One run each, in order: what a hostile or broken server could put in its server_args.
HOSTILE: list[dict[str, object]] = [
    {"clip\x1b]52;c;cHduZWQ=\x07": 1},  # OSC 52: sets the clipboard to "pwned"
    {"wipe\x1b[2J\x1b[H": 1, "served_model_name": "Qwen\x1b[8m-hidden"},  # CSI: clear, home, conceal
    {"c1\x9b2J\x9d52;c;cHduZWQ=\x9c": 1},  # the 8-bit CSI and OSC
    {"bidi\u202eevil\u2066x\u2069\u200f": 1},  # right-to-left override, isolate, mark
    {"markup[/bold][link=http://x]": 1},  # rich markup: must print as written, not fail
    {"speculative_draft_model_path": "/models/d\x1b]52;c;cHduZWQ=\x07"},  # quoted by a warning
]

#: What must never reach a terminal from a log: C0 but newline, DEL, C1, bidi controls.
UNSAFE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def hostile_log(path: Path, t0: datetime = datetime(2026, 10, 1)) -> Path:
    """A first plain run, then one run per entry of ``HOSTILE`` (each adds to the last's args)."""
    rng, lines, args = random.Random(3), [], {}
    for i, extra in enumerate([{}, *HOSTILE]):
        args.update(extra)
        ts = t0 + timedelta(minutes=10 * i)
        lines += synth.startup(ts, 1, **args)
        lines += synth.traffic(rng, ts + timedelta(seconds=50), 40, 2.5)
        lines += synth.shutdown(ts + timedelta(seconds=200))
    path.write_text("\n".join(lines) + "\n")
    return path
