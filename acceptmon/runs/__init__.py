"""Server (re)starts and config changes → runs with config snapshots and diffs.

A run is one server lifetime on one source: opened by a ``server_args``
line (or by the first record when the log starts mid-run), closed by a
shutdown, a crash or the next start. Its snapshot is the parsed server args
minus per-start noise, plus the draft model's ``config.json`` — which is
where the EAGLE-3 layer ids live and which no log line shows.

A server can also change while it runs: an online weight update, a config
override, an adaptive draft-steps change, an edited watched file. Each opens a
*segment*: a new run (``kind`` says which, ``reason`` how) with its own
snapshot and a diff against the one before, so the detector, ``/api/runs`` and
``acceptmon runs`` treat it as the boundary it is. A weight update has no key
of its own in the server args; the snapshot counts it (``runtime.weight_updates``).
vLLM's start lines (``non-default args``, v0's engine config) open runs as
SGLang's ``server_args`` do; their ``speculative_config`` gives the settings.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from acceptmon.model import (
    ConfigDiff,
    ConfigSnapshot,
    Crash,
    DecodeSample,
    Meta,
    Ranks,
    Record,
    Run,
    RuntimeChange,
    ServerReady,
    ServerStart,
    Shutdown,
    SpecConfig,
    SpecParamsUpdate,
)
from acceptmon.runs.rate import accept_rate
from acceptmon.text.redact import redact_args

#: Server args that differ on every start and say nothing about acceptance.
VOLATILE_ARGS = frozenset({"random_seed"})

#: (source name, draft model path, when the run started) → the draft model's config.json, or None.
DraftReader = Callable[[str, str, "datetime | None"], "dict[str, Any] | None"]


#: Run kinds that mark a segment of a running server (no restart), and how a finding says it.
SEGMENT_KINDS = {
    "weight_update": "an online weight update",
    "config_override": "a config change at run time",
    "spec_params": "an adaptive draft-steps change",
    "watched": "a change to watched files",
}


#: Keys only llama.cpp's start-up facts carry (its ``model`` key is also vLLM's).
LLAMACPP_ARGS = frozenset({"build", "model_draft", "n_parallel"})


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def settings_from_args(args: dict[str, Any]) -> SpecConfig:
    if (
        "model_path" not in args
        and not LLAMACPP_ARGS & args.keys()
        and ("model" in args or "speculative_config" in args)
    ):
        return _vllm_settings(args)

    def num(key: str) -> int | None:
        return _int(args.get(key))

    algorithm = args.get("speculative_algorithm")
    interval = num("decode_log_interval")
    return SpecConfig(
        algorithm=str(algorithm) if algorithm else None,
        num_steps=num("speculative_num_steps"),
        eagle_topk=num("speculative_eagle_topk"),
        num_draft_tokens=num("speculative_num_draft_tokens"),
        draft_model_path=_str_or_none(args.get("speculative_draft_model_path") or args.get("model_draft")),
        model_path=_str_or_none(args.get("served_model_name") or args.get("model_path") or args.get("model")),
        decode_log_interval=interval if interval and interval > 0 else 40,
    )


def _single_file(settings: SpecConfig) -> bool:
    return (settings.draft_model_path or "").lower().endswith(".gguf")


def draft_unread(run: Run) -> bool:
    """Whether the run has a draft model whose config.json its snapshot lacks (not found, not read)."""
    spec = run.spec
    return bool(
        run.config is not None
        and run.config.draft_config is None
        and spec.draft_model_path
        and not _single_file(spec)
    )


def _str_or_none(v: Any) -> str | None:
    return str(v) if v not in (None, "") else None


def _vllm_settings(args: dict[str, Any]) -> SpecConfig:
    """vLLM: ``speculative_config`` (v1 a dict of the CLI's JSON, v0/v1 engine lines a
    ``SpeculativeConfig(…)`` repr; older CLIs top-level ``speculative_model`` and
    ``num_speculative_tokens``). k draft tokens per round: the run's slots."""
    spec = args.get("speculative_config")
    if isinstance(spec, str):
        try:
            spec = json.loads(spec)
        except ValueError:
            spec = None
    spec = spec if isinstance(spec, dict) else {}
    k = next(
        (
            n
            for n in (
                _int(spec.get("num_speculative_tokens")),
                _int(spec.get("num_spec_tokens")),
                _int(args.get("num_speculative_tokens")),
            )
            if n
        ),
        None,
    )
    draft = spec.get("model") or spec.get("draft_model") or args.get("speculative_model")
    method = spec.get("method")
    served = args.get("served_model_name")
    if isinstance(served, list):
        served = served[0] if served else None
    return SpecConfig(
        algorithm=str(method) if method else ("draft_model" if draft or k else None),
        num_steps=k,
        draft_model_path=_str_or_none(draft),
        model_path=_str_or_none(served or args.get("model") or args.get("model_tag")),
    )


def _rank0(ranks: Ranks) -> bool:
    """Every scheduler rank prints a runtime change; rank 0 (or a rank-less line) stands for all."""
    return all(n == 0 for _, n in ranks)


def flatten(tree: Any, prefix: str = "") -> dict[str, Any]:
    """Nested dicts → {dotted.path: leaf}; lists stay whole (they are values)."""
    if not isinstance(tree, dict):
        return {prefix: tree}
    out: dict[str, Any] = {}
    for key in sorted(tree, key=str):
        path = f"{prefix}.{key}" if prefix else str(key)
        value = tree[key]
        if isinstance(value, dict) and value:
            out.update(flatten(value, path))
        else:
            out[path] = value
    return out


def snapshot(
    args: dict[str, Any],
    draft: dict[str, Any] | None,
    watched: dict[str, Any] | None = None,
    ignore: frozenset[str] = VOLATILE_ARGS,
    runtime: dict[str, Any] | None = None,
) -> ConfigSnapshot:
    # Secrets go here at the latest (start lines are redacted as they are parsed already).
    kept = redact_args({k: v for k, v in args.items() if k not in ignore})
    draft = redact_args(draft) if draft is not None else None
    watched = redact_args(watched or {})
    tree: dict[str, Any] = {"args": kept, "draft": draft, "watched": watched}
    if runtime:  # absent from a start's tree, so hashes of starts stay what they were
        tree["runtime"] = runtime
    digest = hashlib.sha256(json.dumps(tree, sort_keys=True, default=repr).encode()).hexdigest()
    return ConfigSnapshot(
        server_args=kept, draft_config=draft, watched=watched, hash=digest[:16], runtime=dict(runtime or {})
    )


def _tree(s: ConfigSnapshot, runtime: bool, draft: bool) -> dict[str, Any]:
    tree = {"args": s.server_args, "draft": s.draft_config or {} if draft else {}, "watched": s.watched}
    return {**tree, "runtime": s.runtime} if runtime and s.runtime else tree


def diff(
    before: ConfigSnapshot, after: ConfigSnapshot, runtime: bool = True, draft_read: bool = True
) -> ConfigDiff:
    """Changed, added and removed keys as dotted paths (``draft.eagle_config.…``).

    A start is diffed without ``runtime``: what changed under the old server (its online
    weight updates) is gone after a restart, and is no cause of the new run's acceptance.
    Without ``draft_read`` (a side's draft config.json was not read) the draft is left out
    and the diff says so (``unread``): a config seen on one side only is no change.
    """
    a, b = flatten(_tree(before, runtime, draft_read)), flatten(_tree(after, runtime, draft_read))
    changed = tuple((k, a[k], b[k]) for k in sorted(a.keys() & b.keys()) if a[k] != b[k])
    added = tuple((k, b[k]) for k in sorted(b.keys() - a.keys()))
    removed = tuple((k, a[k]) for k in sorted(a.keys() - b.keys()))
    return ConfigDiff(changed=changed, added=added, removed=removed, unread=() if draft_read else ("draft",))


def normalised_rate(accept_len: float, settings: SpecConfig) -> float | None:
    """``rate.accept_rate`` for a run's settings (the run tracker fills it into each Decode record)."""
    return accept_rate(accept_len, settings.slots)


@dataclass
class SourceRuns:
    """Run history of one source (bounded: only the current and previous)."""

    current: Run | None = None
    previous: Run | None = None
    seq: int = 0
    ended: bool = False
    crashed: bool = False
    history: list[Run] = field(default_factory=list)


class RunTracker:
    """Follows runs per source and fills in what a record needs from its run."""

    def __init__(
        self,
        draft_reader: DraftReader | None = None,
        history: int = 50,
        watched_reader: Callable[[], dict[str, Any]] | None = None,
        declared: Callable[[str], SpecConfig | None] | None = None,
    ) -> None:
        """``declared`` gives a source's speculative settings for a run whose start line was
        never seen (rotated away, read from the end), so its accept rate can still be normalised."""
        self._sources: dict[str, SourceRuns] = {}
        self._declared = declared
        self._read_draft = draft_reader
        self._read_watched = watched_reader
        self._history = history

    def configure(
        self, draft_reader: DraftReader | None, watched_reader: Callable[[], dict[str, Any]] | None
    ) -> None:
        """Reloaded settings: where the next runs' draft configs and watched files come from."""
        self._read_draft, self._read_watched = draft_reader, watched_reader

    def settings_unknown(self, source: str) -> bool:
        """Whether the current run has neither a start line nor declared settings (rates unknown)."""
        run = self.current(source)
        return run is not None and run.config is None and run.spec.slots is None

    def current(self, source: str) -> Run | None:
        state = self._sources.get(source)
        return state.current if state else None

    def runs(self, source: str) -> list[Run]:
        state = self._sources.get(source)
        return list(state.history) if state else []

    def ended(self, source: str) -> bool:
        """Whether the current run of ``source`` already saw a shutdown or crash."""
        state = self._sources.get(source)
        return bool(state and state.ended)

    def sources(self) -> list[str]:
        return sorted(self._sources)

    def observe(self, record: Record) -> tuple[Record, Run | None]:
        """Update run state from ``record``; return it enriched (normalised rate), and the run
        it started if it started one (a record starts at most one).

        Returned, not called back: whoever feeds the tracker hands the start on in line order
        (``ingest.Pipeline``), and nothing runs in the middle of the tracker's own update.
        """
        source = record.meta.source
        state = self._sources.get(source)
        if state is None:
            state = self._sources[source] = SourceRuns()
        started = None
        if isinstance(record, ServerStart):
            started = self._start(state, record)
        elif state.current is None:
            declared = self._declared(source) if self._declared else None
            started = self._open(state, source, record, None, declared, kind="log")
            if isinstance(record, SpecParamsUpdate | RuntimeChange):
                return record, started  # the run it changes begins here: nothing to segment
        if isinstance(record, DecodeSample):
            return self._enrich(state, record), started
        if isinstance(record, Shutdown | Crash):
            state.ended = True
            state.crashed = state.crashed or isinstance(record, Crash)
        elif isinstance(record, SpecParamsUpdate):
            started = self._adapt(state, record)
        elif isinstance(record, RuntimeChange):
            started = self._runtime(state, record)
        return record, started

    def _enrich(self, state: SourceRuns, sample: DecodeSample) -> DecodeSample:
        run = state.current
        if sample.accept_len is None or run is None:
            return sample
        rate = normalised_rate(sample.accept_len, run.spec)
        return replace(sample, accept_rate=rate) if rate is not None else sample

    def _start(self, state: SourceRuns, record: ServerStart) -> Run:
        settings = settings_from_args(record.args)
        draft = None
        # A single-file draft (llama.cpp's GGUF) keeps its config inside the file: no config.json.
        if self._read_draft is not None and settings.draft_model_path and not _single_file(settings):
            draft = self._read_draft(record.meta.source, settings.draft_model_path, record.meta.ts)
        watched = self._read_watched() if self._read_watched is not None else None
        return self._open(state, record.meta.source, record, snapshot(record.args, draft, watched), settings)

    def _open(
        self,
        state: SourceRuns,
        source: str,
        record: Record,
        config: ConfigSnapshot | None,
        settings: SpecConfig | None = None,
        kind: str = "start",
        reason: str = "",
    ) -> Run:
        state.seq += 1
        prev = state.current
        base = prev
        segment = kind in SEGMENT_KINDS
        change = None
        if prev and prev.config and config:
            unread = draft_unread(prev) or (
                config.draft_config is None
                and bool(settings and settings.draft_model_path and not _single_file(settings))
            )
            change = diff(prev.config, config, runtime=segment, draft_read=not unread)
        run = Run(
            source=source,
            run_id=f"r{state.seq}",
            started=record.meta.ts,
            started_lineno=record.meta.lineno,
            config=config,
            spec=settings or SpecConfig(),
            previous_run_id=base.run_id if base else None,
            diff=change,
            kind=kind,
            reason=reason,
        )
        state.previous, state.current = prev, run
        state.ended = state.crashed = False
        state.history = [*state.history[-(self._history - 1) :], run]
        return run

    def new_segment(self, source: str, watched: dict[str, Any]) -> Run | None:
        """Watched files changed while the server runs: open a segment if the snapshot differs.

        The draft config stays the run's own: the server read it at start and
        keeps it, so an edit belongs to the next start. So does any edit made
        while the server is stopped (the start reads the files again).
        """
        state = self._sources.get(source)
        run = state.current if state else None
        if state is None or state.ended or run is None or run.config is None:
            return None
        config = snapshot(
            run.config.server_args, run.config.draft_config, watched, frozenset(), run.config.runtime
        )
        if config.hash == run.config.hash:
            return None
        marker = ServerReady(Meta(source, run.started_lineno, None))
        return self._open(state, source, marker, config, run.spec, "watched", "watched files changed")

    def checkpoint(self) -> dict[str, Any]:
        from acceptmon.runs.codec import run_to_dict

        return {
            name: {
                "seq": st.seq,
                "ended": st.ended,
                "crashed": st.crashed,
                "current": run_to_dict(st.current) if st.current else None,
                "previous": run_to_dict(st.previous) if st.previous else None,
            }
            for name, st in self._sources.items()
        }

    def restore(self, data: dict[str, Any]) -> None:
        from acceptmon.runs.codec import run_from_dict

        for name, d in data.items():
            st = self._sources[name] = SourceRuns(seq=int(d.get("seq", 0)))
            st.ended, st.crashed = bool(d.get("ended")), bool(d.get("crashed"))
            st.current = run_from_dict(d["current"]) if d.get("current") else None
            st.previous = run_from_dict(d["previous"]) if d.get("previous") else None
            st.history = [r for r in (st.previous, st.current) if r is not None]

    def _adapt(self, state: SourceRuns, update: SpecParamsUpdate) -> Run | None:
        """Adaptive spec changed the active steps (chains draft steps + 1 tokens): a segment."""
        run = state.current
        if run is None or state.ended or update.steps_after == run.spec.num_steps:
            return None
        s = run.spec
        drafts = update.steps_after + 1 if (s.eagle_topk or 1) == 1 else s.num_draft_tokens
        settings = replace(s, num_steps=update.steps_after, num_draft_tokens=drafts)
        config = run.config
        if config is not None:
            args = {**config.server_args, "speculative_num_steps": update.steps_after}
            if drafts is not None:
                args["speculative_num_draft_tokens"] = drafts
            config = self._resnap(config, args, config.runtime)
        reason = f"steps {update.steps_before} -> {update.steps_after}"
        return self._open(state, run.source, update, config, settings, "spec_params", reason)

    def _runtime(self, state: SourceRuns, change: RuntimeChange) -> Run | None:
        """A weight update or a run-time config change: a segment with its own snapshot and diff.

        Only rank 0's line counts (each rank prints one). A config change that changes
        nothing in the snapshot (a repeat, or values the start line already had) opens none.
        """
        run = state.current
        if run is None or state.ended or not _rank0(change.meta.ranks):
            return None
        config, settings = run.config, run.spec
        if change.kind == "weight_update":
            if config is not None:
                updates = _int(config.runtime.get("weight_updates")) or 0
                config = self._resnap(
                    config, config.server_args, {**config.runtime, "weight_updates": updates + 1}
                )
            return self._open(
                state, run.source, change, config, settings, "weight_update", "Update weights end."
            )
        if config is None:
            return None  # no snapshot to change: nothing to diff against
        known = change.kind == "global_args"  # every arg printed: only the start line's keys
        new = {k: v for k, v in change.changes.items() if not known or k in config.server_args}
        new = {k: v for k, v in new.items() if k not in VOLATILE_ARGS}
        args = {**config.server_args, **new}
        after = self._resnap(config, args, config.runtime)
        if after.hash == config.hash:
            return None
        changed = sorted(k for k in new if config.server_args.get(k, object()) != args[k])
        reason = (
            "set " + ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
        )
        return self._open(
            state, run.source, change, after, settings_from_args(args), "config_override", reason
        )

    @staticmethod
    def _resnap(config: ConfigSnapshot, args: dict[str, Any], runtime: dict[str, Any]) -> ConfigSnapshot:
        return snapshot(args, config.draft_config, config.watched, frozenset(), runtime)
