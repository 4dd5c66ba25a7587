"""Every sample backfill writes at time T is what a live agent reading the same log served at T.

The agent is replayed on a manual clock: at each of backfill's sample times T the log holds
the lines logged up to T (a line with no time of its own was logged with the line before it),
the clock reads T, the agent reads them, and its ``/metrics`` text is compared, series by
series, with backfill's sample at T: the store's series and the findings' (active from first
seen, 0 once resolved, the same labels). On main the bulk path had stored the whole chunk
before the sampler looked (the first sample of a two-run log counted the whole first run),
and history held no finding series at all.
"""

from __future__ import annotations

import random
import re
import sys
import tempfile
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from unittest import mock

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from acceptmon.apps.agent.agent import Agent
from acceptmon.apps.agent.api import metrics_text
from acceptmon.apps.backfill import collect
from acceptmon.clock import ManualClock
from acceptmon.ingest import read
from acceptmon.metrics.collect import STORE_CATALOGUE
from acceptmon.settings import from_mapping
from acceptmon.sources.files import expand
from acceptmon.testing import synth

#: One series' sample: (sample name, sorted labels without job/instance).
Key = tuple[str, tuple[tuple[str, str], ...]]
#: The families compared: the store's, and the findings' (``acceptmon_finding_active`` …).
STORE_NAMES = {m.name for m in STORE_CATALOGUE} | {
    "acceptmon_finding_active",
    "acceptmon_finding_change_info",
    "acceptmon_finding_accept_length",
    "acceptmon_findings",
}
_STAMP = re.compile(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)")


def _runs_log(seed: int, levels: tuple[float, ...]) -> list[str]:
    """One run per level (acceptance drops between them), each a start, traffic and a stop."""
    rng = random.Random(seed)
    ts = datetime.now().replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(days=3)
    lines: list[str] = []
    for k, level in enumerate(levels):
        lines += synth.startup(ts, seed + k, speculative_draft_model_path=f"/models/draft-{k}")
        ts = _time(lines[-1])  # noise lines with their own (later) times start the run
        for line in synth.traffic(rng, ts, rng.randrange(40, 160), level):
            lines.append(line)
            if rng.random() < 0.05:
                lines.append("NCCL INFO Channel 00/02 : 0[0] -> 1[1] via P2P/IPC")  # no time of its own
        ts = _time(next(t for t in reversed(lines) if _STAMP.match(t))) + timedelta(
            seconds=rng.randrange(1, 90)
        )
        lines += synth.shutdown(ts)
        ts += timedelta(seconds=rng.randrange(1, 600))
    return lines


def _time(line: str) -> datetime:
    m = _STAMP.match(line)
    assert m is not None, line
    return datetime.fromisoformat(m.group(1))


def _times(lines: list[str]) -> list[float]:
    """Each line's epoch time (UTC); a line without one was logged with the line before it."""
    out: list[float] = []
    for line in lines:
        m = _STAMP.match(line)
        out.append(datetime.fromisoformat(m.group(1)).replace(tzinfo=UTC).timestamp() if m else out[-1])
    return out


def _backfilled(path: Path, step: float, read_size: int) -> dict[float, dict[Key, float]]:
    reader = sys.modules[read.read_chunks.__module__]  # where the chunk size is read
    with mock.patch.object(reader, "READ_SIZE", read_size):
        logs = [replace(lg, name="gpu") for lg in expand(str(path))]
        sampler = collect(logs, UTC, step, None, {})
    out: dict[float, dict[Key, float]] = {}
    for ts, name, labels, value in sampler.recorder.samples():
        out.setdefault(ts, {})[(name, labels)] = value
    return out


def _served(agent: Agent) -> dict[Key, float]:
    out: dict[Key, float] = {}
    for family in text_string_to_metric_families(metrics_text(agent)):
        if family.name not in STORE_NAMES and family.name.removesuffix("_total") not in STORE_NAMES:
            continue
        for s in family.samples:
            if s.labels.get("source") == "gpu":
                out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def _replay(directory: Path, lines: list[str], step: float, read_size: int) -> int:
    """Compare every sample; return how many held a firing finding (the comparison is not vacuous)."""
    whole = directory / "whole.log"
    whole.write_text("".join(line + "\n" for line in lines))
    history = _backfilled(whole, step, read_size)
    assert len(history) >= 2
    times = _times(lines)
    live = directory / "live.log"
    live.write_text("")
    cfg = from_mapping(
        {
            "state_dir": str(directory / "state"),
            "read_draft_config": False,
            "sources": [{"path": str(live), "name": "gpu", "read_from_beginning": True, "timezone": "UTC"}],
        }
    )
    clock = ManualClock(min(history))
    agent = Agent(cfg, clock=clock)
    try:
        agent.open()
        written, firing = 0, 0
        for at in sorted(history):
            cut = next((i for i, t in enumerate(times) if t > at), len(lines))
            with live.open("a") as f:
                f.write("".join(line + "\n" for line in lines[written:cut]))
            written = cut
            clock.advance(at - clock.now())
            agent.step()
            while agent.loop.backlog:
                agent.step()
            agent.evaluate(wall_clock=False)  # by the log's own time: a backlog is not a stall
            served = _served(agent)
            sampled = {(name, tuple(kv for kv in labels if kv[0] not in ("job", "instance"))): v
                       for (name, labels), v in history[at].items()}  # fmt: skip
            assert sampled == served, (at, cut, _diff(sampled, served))
            firing += any(k[0] == "acceptmon_finding_active" and v == 1.0 for k, v in served.items())
    finally:
        agent.close()
    return firing


def _diff(
    sampled: dict[Key, float], served: dict[Key, float]
) -> list[tuple[Key, float | None, float | None]]:
    keys = sorted(set(sampled) | set(served))
    return [(k, sampled.get(k), served.get(k)) for k in keys if sampled.get(k) != served.get(k)][:6]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10**6),
    levels=st.sampled_from([(2.4, 1.6), (2.4, 1.7, 2.3), (3.1, 2.2, 1.4)]),
    step=st.sampled_from([1.0, 5.0, 30.0, 60.0, 300.0]),
    read_size=st.sampled_from([300, 4096, 1 << 20]),
)
def test_every_backfilled_sample_is_what_the_agent_served_then(
    seed: int, levels: tuple[float, ...], step: float, read_size: int
) -> None:
    with tempfile.TemporaryDirectory() as directory:
        _replay(Path(directory), _runs_log(seed, levels), step, read_size)


def test_each_sample_counts_the_decode_lines_logged_by_then_and_holds_the_last_one(tmp_path: Path) -> None:
    """The issue's case, read off the log itself: a sample's Decode count is the lines logged
    by then (on main, the whole chunk's), its accept length the last of them (on main, the
    run's last value for the whole run)."""
    lines = _runs_log(7, (2.4, 1.6))
    path = tmp_path / "two-runs.log"
    path.write_text("".join(line + "\n" for line in lines))
    history = _backfilled(path, 60.0, 1 << 20)
    decodes = [(t, line) for line, t in zip(lines, _times(lines), strict=True) if "Decode batch" in line]
    checked = 0
    for at, sample in history.items():
        logged = [line for t, line in decodes if t <= at]
        values = {name: v for (name, _), v in sample.items()}
        assert values["acceptmon_decode_batches_total"] == len(logged), at
        if logged:
            last = float(re.findall(r"accept len: ([\d.]+)", logged[-1])[0])
            assert values["acceptmon_spec_accept_length"] == last, at
            checked += 1
    assert checked > 5


def test_a_drop_fires_and_resolves_in_history_as_the_agent_served_it(tmp_path: Path) -> None:
    """Two- and three-run logs whose drop fires: every sample's finding series are the agent's,
    and some samples hold it firing (on main, history held no finding series)."""
    for seed, levels in ((7, (2.4, 1.6)), (7, (2.4, 1.6, 2.3))):
        (tmp_path / f"{len(levels)}").mkdir()
        assert _replay(tmp_path / f"{len(levels)}", _runs_log(seed, levels), 60.0, 4096) > 0, levels
