"""The one JSON shape of a finding: webhooks, ``/api/findings`` and ``oneshot --format findings``.

Versioned (``schema``) and flat enough to template on. The webhook adds its
links and the queue a ``delivery_id``; the API and one-shot add flat fields
that make the common questions one key away: which keys changed, before and
after accept length, still firing or not.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

from acceptmon.detect.cost import cost_of
from acceptmon.model import ConfigDiff, Finding

SCHEMA_VERSION = 1


def finding_payload(finding: Finding) -> dict[str, Any]:
    """The finding as a JSON-able dict; every value is a JSON primitive."""
    return {
        "schema": SCHEMA_VERSION,
        "state": "firing" if finding.active else "resolved",
        "rule": finding.rule,
        "severity": finding.severity,
        "source": finding.source,
        "host": finding.host or None,
        "engine": finding.engine or None,
        "model": finding.model,
        "draft_model": finding.draft_model,
        "key": finding.key,
        "summary": finding.summary,
        "run_id": finding.run_id,
        "run_kind": finding.run_kind or None,
        "run_reason": finding.run_reason or None,
        "baseline_run_id": finding.baseline_run_id,
        "first_seen": _iso(finding.first_seen),
        "resolved_at": _iso(finding.resolved_at),
        "before": _side(
            finding.before_accept_len, finding.before_accept_rate, finding.before_ci, finding.before_n
        ),
        "after": _side(
            finding.after_accept_len, finding.after_accept_rate, finding.after_ci, finding.after_n
        ),
        "measure": {  # what before/after's ci, n and p_value are of (accept len unless the draft's length changed)
            "name": finding.measure,
            "note": finding.measure_note or None,
            "before": _finite(finding.before_per_token),
            "after": _finite(finding.after_per_token),
        },
        "now": {
            "accept_len": _finite(finding.now_accept_len),
            "accept_rate": _finite(finding.now_accept_rate),
        },
        "p_value": _finite(finding.p_value),
        "cost": _cost(finding),
        "diff": _diff(finding.diff),
        "labels": dict(finding.labels),
    }


def finding_json(f: Finding) -> dict[str, Any]:
    """What ``/api/findings`` and ``oneshot --format findings`` print for one finding."""
    out = finding_payload(f)
    out.update(
        changed_keys=f.changed_keys(),
        before_accept_len=out["before"]["accept_len"],
        after_accept_len=out["after"]["accept_len"],
        before_accept_rate=out["before"]["accept_rate"],
        after_accept_rate=out["after"]["accept_rate"],
        active=f.active,
    )
    return out


def _cost(f: Finding) -> dict[str, Any] | None:
    """A drop's estimated cost (``detect.cost``): throughput share lost, its interval, tokens."""
    cost = cost_of(f)
    if cost is None:
        return None
    return {
        "throughput_lost": _finite(round(cost.fraction, 4)),
        "throughput_lost_ci": None
        if cost.interval is None
        else [_finite(round(v, 4)) for v in cost.interval],
        "tokens_lost_since_first_seen": _finite(cost.tokens),
    }


def _side(
    accept_len: float | None, accept_rate: float | None, ci: tuple[float, float] | None, n: int
) -> dict[str, Any]:
    return {
        "accept_len": _finite(accept_len),
        "accept_rate": _finite(accept_rate),
        "ci": None if ci is None else [_finite(ci[0]), _finite(ci[1])],
        "n": n,
    }


def _diff(diff: ConfigDiff | None) -> dict[str, list[dict[str, Any]]]:
    if diff is None:
        return {"changed": [], "added": [], "removed": []}
    return {
        "changed": [{"key": k, "old": _json(o), "new": _json(n)} for k, o, n in diff.changed],
        "added": [{"key": k, "value": _json(v)} for k, v in diff.added],
        "removed": [{"key": k, "value": _json(v)} for k, v in diff.removed],
    }


def _json(value: Any) -> Any:
    """Config values are arbitrary; keep JSON primitives, stringify the rest."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return _finite(value)
    if isinstance(value, list | tuple):
        return [_json(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _json(v) for k, v in value.items()}
    return str(value)


def _finite(value: float | None) -> float | None:
    """NaN and infinities are not JSON."""
    return value if value is not None and math.isfinite(value) else None


def _iso(ts: datetime | None) -> str | None:
    return None if ts is None else ts.isoformat()
