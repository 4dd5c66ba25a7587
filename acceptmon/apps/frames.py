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
from itertools import repeat
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


#: Columns whose value is one per batch (a run of equal values): kept as (value, count) runs.
_RUNS = ("source", "engine", "run_id")


class _Columns:
    """A pipeline sink appending each interval to plain lists (no per-line dicts); the columns
    that hold one value per batch are kept as runs of it."""

    def __init__(self, tracker: RunTracker) -> None:
        self._tracker = tracker
        self.cols: dict[str, list[Any]] = {c: [] for c in COLUMNS if c not in _RUNS}
        self.runs: dict[str, list[tuple[Any, int]]] = {c: [] for c in _RUNS}
        self._ranks: dict[Any, str] = {}
        self._rates: dict[tuple[float, int], float] = {}

    def _rank(self, ranks: Any) -> str:
        """``TP0``, ``DP1 TP4`` (memoised: a log has few rank combinations)."""
        text = self._ranks.get(ranks)
        if text is None:
            text = self._ranks[ranks] = " ".join(f"{k.upper()}{v}" for k, v in ranks)
        return text

    def _repeat(self, values: dict[str, Any], n: int) -> None:
        for name, value in values.items():
            runs = self.runs[name]
            if runs and runs[-1][0] == value:
                runs[-1] = (value, runs[-1][1] + n)
            else:
                runs.append((value, n))

    def observe_run_start(self, run: Run) -> None:
        """Nothing to note: each interval looks its run up."""

    def observe_batch(self, batch: DecodeBatch) -> None:
        """A stretch of Decode lines, column by column (the fast path: no record objects)."""
        if not batch.n:
            return
        run = self._tracker.current(batch.source)
        c, n = self.cols, batch.n
        c["ts"] += batch.epochs
        self._repeat({"source": batch.source, "run_id": run.run_id if run else None, "engine": "sglang"}, n)
        ranks = batch.ranks
        texts = {r: self._rank(r) for r in set(ranks)}
        c["rank"] += map(texts.__getitem__, ranks)
        slots, lens = batch.spec.slots, batch.lens
        if lens is None:
            c["accept_len"] += repeat(None, n)
            c["accept_rate"] += repeat(None, n)
        else:
            c["accept_len"] += lens
            if slots:  # runs.rate.accept_rate, once per distinct length (a batch has few)
                rate = {a: round(min(1.0, max(0.0, (a - 1.0) / slots)), 4) for a in set(lens)}
                c["accept_rate"] += map(rate.__getitem__, lens)
            else:
                c["accept_rate"] += repeat(None, n)
        c["running_req"] += batch.running
        c["queue_req"] += batch.queue
        c["gen_throughput"] += batch.throughput
        c["accepted_tokens"] += repeat(None, n)
        c["drafted_tokens"] += repeat(None, n)

    def observe(self, r: Record) -> None:
        if not isinstance(r, DecodeSample | SpecSample):
            return
        run = self._tracker.current(r.meta.source)
        c = self.cols
        decode = isinstance(r, DecodeSample)
        engine = "sglang" if decode else "vllm"
        self._repeat({"source": r.meta.source, "run_id": run.run_id if run else None, "engine": engine}, 1)
        c["ts"].append(r.meta.ts.timestamp() if r.meta.ts is not None else None)
        c["rank"].append(self._rank(r.meta.ranks))
        c["accept_len"].append(r.accept_len)
        c["accept_rate"].append(r.accept_rate)
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
    state_dir: str | None = None,
) -> tuple[Any, Any]:
    names = [sources] if isinstance(sources, str) else list(sources)
    tz = _zone(timezone)
    with opened(names, ssh_config) as (logs, readers):
        pipeline, table = new_pipeline(tz, draft_config, readers, run_table=runs, state_dir=state_dir)
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
    import numpy as np
    import pandas as pd

    columns, _table = _read(sources, timezone, draft_config, ssh_config)
    c, runs = columns.cols, columns.runs
    epochs = np.array(_in_pandas_range(c["ts"]), dtype=np.float64)
    frame = pd.DataFrame(
        {
            "ts": pd.to_datetime(epochs, unit="s", utc=True).tz_convert(_zone(timezone)),
            "source": _categorical(runs["source"]),
            "engine": _categorical(runs["engine"], ["sglang", "vllm"]),
            "run_id": _categorical(runs["run_id"]),
            "rank": pd.array(c["rank"], dtype="string"),
            "accept_len": np.array(c["accept_len"], dtype=np.float64),
            "accept_rate": np.array(c["accept_rate"], dtype=np.float64),
            "running_req": _ints(c["running_req"]),
            "queue_req": _ints(c["queue_req"]),
            "gen_throughput": np.array(c["gen_throughput"], dtype=np.float64),
            "accepted_tokens": _ints(c["accepted_tokens"]),
            "drafted_tokens": _ints(c["drafted_tokens"]),
        }
    )
    return frame


def _categorical(runs: list[tuple[Any, int]], categories: list[str] | None = None) -> pd.Categorical:
    """Runs of (value, count) as ``pd.Categorical`` of the values repeated (None: missing),
    built from codes: a category per distinct value, not a hash per row."""
    import numpy as np
    import pandas as pd

    names = categories if categories is not None else sorted({v for v, _ in runs if v is not None})
    code = {name: i for i, name in enumerate(names)}
    codes = np.repeat(
        np.array([code.get(v, -1) if v is not None else -1 for v, _ in runs], dtype=np.int64),
        np.array([n for _, n in runs], dtype=np.int64),
    )
    return pd.Categorical.from_codes(codes, categories=names)


def _ints(values: list[int | None]) -> Any:
    """An ``Int64`` array (None: missing), from a NumPy array where none or all are missing."""
    import numpy as np
    import pandas as pd

    missing = values.count(None)
    if not missing:
        return pd.array(np.array(values, dtype=np.int64), dtype="Int64")
    if missing == len(values):
        return pd.arrays.IntegerArray(np.zeros(len(values), dtype=np.int64), np.ones(len(values), dtype=bool))
    return pd.array(values, dtype="Int64")


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
    state_dir: str | None = None,
) -> pd.DataFrame:
    """One row per run: what ``acceptmon runs --format json`` says, flattened (``state_dir``: the
    draft configs an agent recorded at each start, as ``acceptmon runs --state-dir``)."""
    extras.require("frames", "acceptmon.read_runs")
    import pandas as pd

    _columns, table = _read(sources, timezone, draft_config, ssh_config, runs=True, state_dir=state_dir)
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
