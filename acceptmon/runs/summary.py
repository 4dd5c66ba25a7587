"""A run in words: its speculative settings and the change that opened it (tables, findings, the demo).

The numbers per run are ``detect.runstats.RunTable``'s, the one per-run summary.
"""

from __future__ import annotations

from acceptmon.model import Run
from acceptmon.runs import SEGMENT_KINDS


def describe_segment(run: Run) -> str | None:
    """``an online weight update (no restart; segment r3 at line 120)``, or None for a start."""
    words = SEGMENT_KINDS.get(run.kind)
    if words is None:
        return None
    detail = f"{run.reason}; " if run.reason and run.kind != "weight_update" else ""
    return f"{words} ({detail}no restart; segment {run.run_id} at line {run.started_lineno})"


def describe_change(run: Run) -> str:
    segment = describe_segment(run)
    if segment is not None:
        return segment
    if run.previous_run_id is None:
        return "first run seen"
    if run.diff is None:
        return "unknown (no config on one side)"
    unread = "draft config not read: a change inside it cannot be seen"
    if not run.diff:
        if run.diff.unread:
            return f"no change visible in server_args; {unread}"
        return "no change visible in server_args or draft config"
    parts = [f"{k}: {_short(a)} → {_short(b)}" for k, a, b in run.diff.changed[:3]]
    parts += [f"+{k}" for k, _ in run.diff.added[: 3 - len(parts)]]
    parts += [f"-{k}" for k, _ in run.diff.removed[: max(0, 3 - len(parts))]]
    extra = len(run.diff.keys()) - len(parts)
    said = "; ".join(parts) + (f" (+{extra} more)" if extra > 0 else "")
    return f"{said}; {unread}" if run.diff.unread else said


def _short(value: object, limit: int = 40) -> str:
    text = repr(value) if not isinstance(value, list) else str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe_settings(run: Run) -> str:
    s = run.spec
    if not s.algorithm:
        return "no speculative decoding"
    return f"{s.algorithm} steps={s.num_steps} topk={s.eagle_topk} draft_tokens={s.num_draft_tokens}"
