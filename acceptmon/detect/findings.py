"""Findings: their keys, the one-sentence summaries, and a bounded book of them per source."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from acceptmon.detect.compare import Comparison, Level
from acceptmon.detect.measure import Measure
from acceptmon.detect.series import rate_from_len
from acceptmon.model import ConfigDiff, Finding, Run
from acceptmon.runs.summary import describe_segment
from acceptmon.text.redact import is_wholly_redacted, masked

DROP = "acceptance_drop_after_change"
COLLAPSED = "speculation_collapsed"
FLOOR = "acceptance_below_floor"
DRIFT = "acceptance_drift"
STALLED = "log_stalled"

#: What a drop is measured in when the draft's shape did not change.
ACCEPT_LEN_ONLY = Measure()

NO_CHANGE = "a restart with no config change visible in server_args or draft config.json"

_MISSING = object()


def change_key(source: str, baseline_run_id: str, run_id: str) -> str:
    return f"{DROP}:{source}:{baseline_run_id}->{run_id}"


def source_key(rule: str, source: str, run_id: str | None = None) -> str:
    """Keys of conditions that outlive a restart leave the run out, so a restart does not re-alert."""
    return f"{rule}:{source}" if run_id is None else f"{rule}:{source}:{run_id}"


def without_secrets(diff: ConfigDiff | None) -> ConfigDiff | None:
    """The diff minus changes that are only secrets: rotating an API key is never a cause of an
    acceptance drop (a restart that changed only secrets is a plain restart).

    Values are compared in their redacted forms with every redaction made alike, so a value that
    merely *holds* a secret (``https://u:<redacted>@mirror/Qwen3-32B`` → ``…/Qwen3-8B``, an
    override holding a token beside a changed ``rope_scaling``) stays a change; only keys whose
    values are wholly a secret (or unset) on both sides, or differ in secrets alone, drop out."""
    if diff is None:
        return None
    return ConfigDiff(
        changed=tuple(c for c in diff.changed if not _secret_only(c[1], c[2])),
        added=tuple(a for a in diff.added if not is_wholly_redacted(a[1])),
        removed=tuple(r for r in diff.removed if not is_wholly_redacted(r[1])),
    )


def _secret_only(old: Any, new: Any) -> bool:
    if is_wholly_redacted(old) or is_wholly_redacted(new):
        return all(v in (None, "") or is_wholly_redacted(v) for v in (old, new))
    return masked(old) == masked(new)


def compose(diffs: Sequence[ConfigDiff | None]) -> ConfigDiff | None:
    """The net diff of consecutive diffs (a key changed and changed back drops out)."""
    net: dict[str, tuple[Any, Any]] = {}
    for d in diffs:
        if d is None:
            continue
        for key, old, new in d.changed:
            net[key] = (net[key][0] if key in net else old, new)
        for key, new in d.added:
            net[key] = (net[key][0] if key in net else _MISSING, new)
        for key, old in d.removed:
            net[key] = (net[key][0] if key in net else old, _MISSING)
    out = ConfigDiff(
        changed=tuple(
            (k, a, b) for k, (a, b) in net.items() if a is not _MISSING and b is not _MISSING and a != b
        ),
        added=tuple((k, b) for k, (a, b) in net.items() if a is _MISSING and b is not _MISSING),
        removed=tuple((k, a) for k, (a, b) in net.items() if b is _MISSING and a is not _MISSING),
    )
    return out or None


def _what_changed(diff: ConfigDiff | None, run: Run | None = None) -> str:
    segment = describe_segment(run) if run is not None else None
    if segment is not None:  # a segment of a running server names itself, then other changes
        keys = [k for k in (diff.keys() if diff else []) if not k.startswith("runtime.")]
        return segment + (" with a change to " + ", ".join(keys[:3]) if keys else "")
    if not diff:
        return NO_CHANGE
    keys = diff.keys()
    more = f" and {len(keys) - 3} more" if len(keys) > 3 else ""
    return "a config change to " + ", ".join(keys[:3]) + more


def _rate(level: Level, slots: int | None) -> float | None:
    rate = rate_from_len(level.value, slots)
    return None if rate is None else round(rate, 4)


def drop_finding(
    run: Run,
    baseline: Run,
    cmp: Comparison,
    diff: ConfigDiff | None,
    slots: tuple[int | None, int | None],
    measure: Measure = ACCEPT_LEN_ONLY,
    lens: Comparison | None = None,
    low: float = 1.0,
) -> Finding:
    """The critical finding for a run whose acceptance fell against its baseline run.

    ``cmp`` is in ``measure``; ``lens`` is the accept-len comparison when that is another
    (per-token acceptance), for the accept-len fields. ``low`` < 1 is the lowest level the
    baseline run sustained relative to its last window (a restart without a config change),
    which the drop was also measured from.
    """
    lens = lens or cmp
    b_rate, a_rate = _rate(lens.before, slots[0]), _rate(lens.after, slots[1])
    rates = f" (accept rate {b_rate:.2f} → {a_rate:.2f})" if b_rate is not None and a_rate is not None else ""
    evidence = f"p = {cmp.p_value:.1e} over {cmp.before_n} vs {cmp.after_n} intervals"
    if measure.per_token:
        summary = (
            f"per-token acceptance on {run.source} fell {cmp.drop:.0%} after {_what_changed(diff, run)}: α "
            f"{cmp.before.value:.2f} → {cmp.after.value:.2f} (accept len {lens.before.value:.2f} → "
            f"{lens.after.value:.2f}), {evidence}; {measure.note}"
        )
    else:
        summary = (
            f"accept len on {run.source} fell {cmp.drop:.0%} after {_what_changed(diff, run)}: median "
            f"{cmp.before.value:.2f} → {cmp.after.value:.2f}{rates}, {evidence}"
        )
        if measure.note:
            summary += f"; {measure.note}"
    if low < 1.0:
        summary += (
            f"; below the lowest level run {baseline.run_id} sustained ({1 - low:.0%} under its last window)"
        )
    per_token = measure.per_token
    return Finding(
        rule=DROP,
        severity="critical",
        source=run.source,
        run_id=run.run_id,
        baseline_run_id=baseline.run_id,
        summary=summary,
        first_seen=None,
        key=change_key(run.source, baseline.run_id, run.run_id),
        before_accept_len=round(lens.before.value, 4),
        after_accept_len=round(lens.after.value, 4),
        before_accept_rate=b_rate,
        after_accept_rate=a_rate,
        before_ci=(round(cmp.before.low, 4), round(cmp.before.high, 4)),
        after_ci=(round(cmp.after.low, 4), round(cmp.after.high, 4)),
        before_n=cmp.before_n,
        after_n=cmp.after_n,
        p_value=cmp.p_value,
        diff=diff,
        model=run.spec.model_path,
        draft_model=run.spec.draft_model_path,
        run_kind=run.kind,
        run_reason=run.reason,
        measure=measure.name,
        measure_note=measure.note,
        before_per_token=round(cmp.before.value, 4) if per_token else None,
        after_per_token=round(cmp.after.value, 4) if per_token else None,
    )


def simple_finding(rule: str, run: Run, summary: str, key: str, after_len: float | None = None) -> Finding:
    """A finding of a rule that looks at one run only."""
    return Finding(
        rule=rule,
        severity="critical" if rule == COLLAPSED else "warning",
        source=run.source,
        run_id=run.run_id,
        baseline_run_id=None,
        summary=summary,
        first_seen=None,
        key=key,
        after_accept_len=None if after_len is None else round(after_len, 4),
        diff=None if rule == STALLED else run.diff,  # a stall is not explained by a config change
        model=run.spec.model_path,
        draft_model=run.spec.draft_model_path,
        run_kind=run.kind,
        run_reason=run.reason,
    )


def began_before(finding: Finding, began: Run, run: Run) -> Finding:
    """A floor breach that began in an earlier run (``began``) than the one it fired in: the change
    that opened ``run`` (often the revert that ended the bad run) is not its cause, so it is
    attributed to where it began and the summary says so."""
    return replace(
        finding,
        diff=began.diff,
        summary=(
            f"{finding.summary}; it began in run {began.run_id} (after {_what_changed(began.diff, began)}), "
            f"before run {run.run_id}: not caused by {_what_changed(run.diff, run)}"
        ),
    )


class Book:
    """The findings of one source by key; resolved ones are kept, at most ``max_resolved``."""

    __slots__ = ("_items", "_max_resolved", "on_change")

    def __init__(self, max_resolved: int, on_change: Callable[[Finding], object] | None = None) -> None:
        """``on_change`` sees each finding as ``fire`` or ``resolve`` leaves it: one-shot keeps
        every finding's last state from it, without re-reading the book after each interval."""
        self._items: dict[str, Finding] = {}
        self._max_resolved = max_resolved
        self.on_change = on_change

    def active(self, key: str) -> bool:
        f = self._items.get(key)
        return f is not None and f.active

    def active_keys(self, rule: str) -> list[str]:
        return [k for k, f in self._items.items() if f.active and f.rule == rule]

    def fire(self, finding: Finding, at: datetime | None) -> None:
        """Record a new or re-opened finding (same key, fresh episode)."""
        self._items.pop(finding.key, None)
        f = self._items[finding.key] = replace(
            finding, first_seen=at, active=True, resolved_at=None, now_accept_len=None, now_accept_rate=None
        )
        if self.on_change is not None:
            self.on_change(f)

    def resolve(
        self, key: str, at: datetime | None, now: tuple[float | None, float | None] = (None, None)
    ) -> None:
        """Close a finding; ``now`` is the acceptance (len, rate) it closed at, if known."""
        f = self._items.get(key)
        if f is None or not f.active:
            return
        length, rate = (None if v is None else round(v, 4) for v in now)
        f = self._items[key] = replace(
            f, active=False, resolved_at=at, now_accept_len=length, now_accept_rate=rate
        )
        if self.on_change is not None:
            self.on_change(f)
        resolved = [k for k, g in self._items.items() if not g.active]
        for k in resolved[: max(0, len(resolved) - self._max_resolved)]:
            del self._items[k]

    def all(self) -> list[Finding]:
        return list(self._items.values())

    def load(self, findings: Iterable[Finding]) -> None:
        """Refill from a checkpoint in ``all()`` order, which decides which resolved one goes first."""
        self._items = {f.key: f for f in findings}
