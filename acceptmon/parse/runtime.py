"""SGLang lines that change a running server without a restart → ``RuntimeChange`` records.

- ``Update weights end.``: an online weight update from disk finished (``POST
  /update_weights_from_disk``; its ``Update engine weights online from disk begin.``
  alone means it failed and rolled back, so only the end counts);
- ``Config updated via context override: {…}`` (0.5.17+) and ``Global server args
  updated! global_server_args_dict={…}`` / ``get_global_server_args()=ServerArgs(…)``
  (≤0.5.16): ``POST /set_internal_state``. The first names only the new values; the
  second prints every server arg (``kind="global_args"``), so the run tracker takes only
  keys the run's start line has.

Each scheduler rank prints its own copy; the run tracker keeps rank 0's.
"""

from __future__ import annotations

from acceptmon.model import TOO_LARGE, Meta, ParseError, RuntimeChange
from acceptmon.parse.server_args import MAX_ARGS_CHARS, parse_mapping
from acceptmon.text.redact import redact_args

WEIGHTS_END = "Update weights end."
OVERRIDE = "Config updated via context override:"
GLOBAL_ARGS = "Global server args updated!"
MARKERS = (WEIGHTS_END, OVERRIDE, GLOBAL_ARGS)


def parse(marker: str, message: str, meta: Meta) -> RuntimeChange | ParseError:
    """``message`` starts with ``marker``."""
    if marker == WEIGHTS_END:
        return RuntimeChange(meta, "weight_update")
    if len(message) > MAX_ARGS_CHARS:
        return ParseError(meta, "runtime change: line too large", TOO_LARGE)
    body = message[len(marker) :]
    kind = "config_override"
    if marker == GLOBAL_ARGS:
        kind = "global_args"
        _, eq, body = body.partition("=")  # after ``global_server_args_dict`` / ``…()``
        if not eq:
            return ParseError(meta, "runtime change: unreadable")
    changes = parse_mapping(body)
    if changes is None:
        return ParseError(meta, "runtime change: unreadable")
    return RuntimeChange(meta, kind, redact_args(changes))
