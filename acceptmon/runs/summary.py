"""A run in words: its speculative settings and the change that opened it (tables, findings, the demo).

The numbers per run are ``detect.runstats.RunTable``'s, the one per-run summary.
"""

from __future__ import annotations

import math

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
    # A change is seen: whether the draft's config moved too is a side note, not a sentence.
    return f"{said} (draft config not read)" if run.diff.unread else said


def _short(value: object, limit: int = 40) -> str:
    text = repr(value) if not isinstance(value, list) else str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe_settings(run: Run, top_len: float | None = None, counted: int = 0, positions: int = 0) -> str:
    """The run's speculative settings, only those known (vLLM has no topk or tree tokens).

    Without a start line or declared settings, acceptance in the log still shows speculation is
    on: a rate per draft position (``positions``) gives the steps, else ``top_len`` (the highest
    accept len seen) bounds them from below, said as inferred; ``counted`` intervals had counts
    but no accept length (llama.cpp's old line).
    """
    s = run.spec
    if s.algorithm:
        known = (("steps", s.num_steps), ("topk", s.eagle_topk), ("draft_tokens", s.num_draft_tokens))
        return " ".join([s.algorithm, *(f"{k}={v}" for k, v in known if v is not None)])
    # A start line without the steps (llama.cpp logs its draft model, never --draft-max) names
    # the draft; only a run without one takes --speculative.
    kind = "speculative decoding with a draft model" if s.draft_model_path else "speculative decoding"
    missing = "steps not logged" if run.config is not None else "settings not logged"
    hint = "" if run.config is not None else "; give them with --speculative num_steps=N"
    if positions:
        return (
            f"{kind} ({missing}; steps={positions}, inferred from the {positions} per-position rates{hint})"
        )
    if top_len is not None and top_len > 1.0:
        steps = max(1, math.ceil(top_len - 1.0 - 1e-9))
        return f"{kind} ({missing}; steps >= {steps}, inferred from accept len up to {top_len:.2f}{hint})"
    if top_len is not None or counted:
        return (
            f"{kind} ({missing}; {counted} requests with acceptance counts but no accept length:"
            " runs are compared by accept rate)"
        )
    if s.draft_model_path:
        return f"{kind} (no acceptance logged yet)"
    return "no speculative decoding seen"
