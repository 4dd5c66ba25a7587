"""Acceptance as pandas DataFrames, for notebooks: ``acceptmon.read_log`` and ``acceptmon.read_runs``.

Same SOURCEs as ``acceptmon runs`` (paths, globs and rotated sets oldest
first, ``-``, ``ssh://``), read through the agent's pipeline, so every number
is the one the agent would have exported. Columns are collected as plain
lists during the read and become typed columns once, at the end.

``read_log`` columns (one row per Decode interval, per rank, and per vLLM
spec-decode record):

==================  ========================  =====================================================
column              dtype                     meaning
==================  ========================  =====================================================
ts                  datetime64[…, zone]       the line's time, in the source's zone (NaT if pandas cannot
                                              hold it: before 1677 or after 2262, with a warning)
source              category                  the log (a rotated set is one source)
engine              category                  ``sglang`` or ``vllm``
run_id              category                  the server run the interval belongs to (r1, r2, …)
rank                string                    rank prefix (``TP0``, ``DP1 TP0``), empty if none
accept_len          float64                   accepted tokens per verify step, bonus token included
accept_rate         float64                   fraction of draft tokens accepted (0-1), when known
running_req         Int64                     #running-req (SGLang)
queue_req           Int64                     #queue-req (SGLang)
gen_throughput      float64                   gen throughput (token/s) (SGLang)
accepted_tokens     Int64                     exact accepted tokens (vLLM)
drafted_tokens      Int64                     exact drafted tokens (vLLM)
==================  ========================  =====================================================
"""

from __future__ import annotations

from datetime import tzinfo
from typing import TYPE_CHECKING, Any

from acceptmon import extras
from acceptmon.detect.runstats import run_json
from acceptmon.ingest.read import new_pipeline, opened, read_logs
from acceptmon.model import DecodeSample, Record, Run, SpecSample
from acceptmon.runs import RunTracker
from acceptmon.runs.batch import DecodeBatch

if TYPE_CHECKING:
    import pandas as pd

COLUMNS = (
    "ts", "source", "engine", "run_id", "rank", "accept_len", "accept_rate",
    "running_req", "queue_req", "gen_throughput", "accepted_tokens", "drafted_tokens",
)  # fmt: skip


class _Columns:
    """A pipeline sink appending each interval to plain lists (no per-line dicts)."""

    def __init__(self, tracker: RunTracker) -> None:
        self._tracker = tracker
        self.cols: dict[str, list[Any]] = {c: [] for c in COLUMNS}
        self._ranks: dict[Any, str] = {}

    def _rank(self, ranks: Any) -> str:
        """``TP0``, ``DP1 TP4`` (memoised: a log has few rank combinations)."""
        text = self._ranks.get(ranks)
        if text is None:
            text = self._ranks[ranks] = " ".join(f"{k.upper()}{v}" for k, v in ranks)
        return text

    def observe_run_start(self, run: Run) -> None:
        """Nothing to note: each interval looks its run up."""

    def observe_batch(self, batch: DecodeBatch) -> None:
        """A stretch of Decode lines, column by column (the fast path: no record objects)."""
        if not batch.n:
            return
        run = self._tracker.current(batch.source)
        c, n = self.cols, batch.n
        stamps = batch.stamps
        lens: list[float | None] = list(batch.lens) if batch.lens is not None else [None] * n
        c["ts"] += batch.epochs
        c["source"] += [batch.source] * n
        c["run_id"] += [run.run_id if run else None] * n
        c["rank"] += [self._rank(ranks) for _, ranks in stamps]
        c["accept_len"] += lens
        slots = batch.spec.slots
        c["accept_rate"] += (
            [None if a is None else round(min(1.0, max(0.0, (a - 1.0) / slots)), 4) for a in lens]
            if slots
            else [None] * n
        )  # runs.rate.accept_rate, inlined: a million calls cost a second
        c["engine"] += ["sglang"] * n
        c["running_req"] += batch.running
        c["queue_req"] += batch.queue
        c["gen_throughput"] += batch.throughput
        c["accepted_tokens"] += [None] * n
        c["drafted_tokens"] += [None] * n

    def observe(self, r: Record) -> None:
        if not isinstance(r, DecodeSample | SpecSample):
            return
        run = self._tracker.current(r.meta.source)
        c = self.cols
        c["ts"].append(r.meta.ts.timestamp() if r.meta.ts is not None else None)
        c["source"].append(r.meta.source)
        c["run_id"].append(run.run_id if run else None)
        c["rank"].append(self._rank(r.meta.ranks))
        c["accept_len"].append(r.accept_len)
        c["accept_rate"].append(r.accept_rate)
        decode = isinstance(r, DecodeSample)
        c["engine"].append("sglang" if decode else "vllm")
        c["running_req"].append(r.running_req if isinstance(r, DecodeSample) else None)
        c["queue_req"].append(r.queue_req if isinstance(r, DecodeSample) else None)
        c["gen_throughput"].append(r.gen_throughput if isinstance(r, DecodeSample) else None)
        c["accepted_tokens"].append(r.accepted_tokens if isinstance(r, SpecSample) else None)
        c["drafted_tokens"].append(r.drafted_tokens if isinstance(r, SpecSample) else None)


def _zone(timezone: str | tzinfo | None) -> tzinfo:
    from acceptmon import log_time

    if timezone is None:
        return log_time.host_zone()
    return log_time.zone(timezone) if isinstance(timezone, str) else timezone


def _read(
    sources: str | list[str],
    timezone: str | tzinfo | None,
    draft_config: list[str] | None,
    ssh_config: str | None,
    runs: bool = False,
) -> tuple[Any, Any]:
    names = [sources] if isinstance(sources, str) else list(sources)
    tz = _zone(timezone)
    with opened(names, ssh_config) as (logs, readers):
        pipeline, table = new_pipeline(tz, draft_config, readers, run_table=runs)
        columns = _Columns(pipeline.tracker)
        pipeline.consumers.append(columns)
        problems = read_logs(pipeline, logs)
    if problems:
        raise OSError(f"cannot read {problems[0]}")
    return columns, table


def read_log(
    sources: str | list[str],
    *,
    timezone: str | tzinfo | None = None,
    draft_config: list[str] | None = None,
    ssh_config: str | None = None,
) -> pd.DataFrame:
    """One row per interval (see the module doc for the columns); raises OSError if a file is unreadable."""
    extras.require("frames", "acceptmon.read_log")
    import pandas as pd

    columns, _table = _read(sources, timezone, draft_config, ssh_config)
    c = columns.cols
    epochs = pd.array(_in_pandas_range(c["ts"]), dtype="float64")
    frame = pd.DataFrame(
        {
            "ts": pd.to_datetime(epochs, unit="s", utc=True).tz_convert(_zone(timezone)),
            "source": pd.Categorical(c["source"]),
            "engine": pd.Categorical(c["engine"], categories=["sglang", "vllm"]),
            "run_id": pd.Categorical(c["run_id"]),
            "rank": pd.array(c["rank"], dtype="string"),
            "accept_len": pd.array(c["accept_len"], dtype="float64"),
            "accept_rate": pd.array(c["accept_rate"], dtype="float64"),
            "running_req": pd.array(c["running_req"], dtype="Int64"),
            "queue_req": pd.array(c["queue_req"], dtype="Int64"),
            "gen_throughput": pd.array(c["gen_throughput"], dtype="float64"),
            "accepted_tokens": pd.array(c["accepted_tokens"], dtype="Int64"),
            "drafted_tokens": pd.array(c["drafted_tokens"], dtype="Int64"),
        }
    )
    return frame


#: Epoch seconds pandas' nanosecond timestamps hold (1677-09-22 … 2262-04-11), whole seconds inside.
_EPOCH_RANGE = (-9_223_372_036.0, 9_223_372_036.0)


def _in_pandas_range(epochs: list[float | None]) -> list[float | None]:
    """``epochs`` with the times pandas cannot hold as None (NaT), and one warning naming how many.

    A corrupted line (year 9999) must not fail the whole log: pandas converts fractional epochs
    at nanosecond resolution, whose range ends in 2262, and raises for the whole column.
    """
    low, high = _EPOCH_RANGE
    out = [t if t is None or low <= t <= high else None for t in epochs]
    dropped = sum(1 for t, kept in zip(epochs, out, strict=True) if t is not None and kept is None)
    if dropped:
        import warnings

        warnings.warn(
            f"acceptmon: {dropped} line time(s) outside pandas' range (1677-2262) dropped (ts is NaT)",
            UserWarning,
            stacklevel=3,
        )
    return out


def read_runs(
    sources: str | list[str],
    *,
    timezone: str | tzinfo | None = None,
    draft_config: list[str] | None = None,
    ssh_config: str | None = None,
) -> pd.DataFrame:
    """One row per run: what ``acceptmon runs --format json`` says, flattened."""
    extras.require("frames", "acceptmon.read_runs")
    import pandas as pd

    _columns, table = _read(sources, timezone, draft_config, ssh_config, runs=True)
    rows = []
    for source in table.sources():
        for stats in table.of(source):
            j = run_json(stats)
            ci = j.pop("accept_len_ci") or [None, None]
            settings = j.pop("settings")
            rows.append(
                {"source": source, **j, "accept_len_ci_low": ci[0], "accept_len_ci_high": ci[1], **settings}
            )
    frame = pd.DataFrame(rows)
    if not frame.empty:
        frame["started"] = pd.to_datetime(frame["started"], utc=True)
    return frame
