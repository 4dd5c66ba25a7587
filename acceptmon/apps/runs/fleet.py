"""``acceptmon runs`` over several logs: each host held against its peers of the same config.

The rule is the one ``AcceptanceBelowPeers`` applies in deploy/prometheus/acceptmon.rules.yml,
on what a read of the logs has: peers are the logs whose latest run has the same config hash
(so the same model and draft); a host is an outlier when its acceptance is under 80% of the
peers' median, with 3 busy peers or more. Busy: at least 20 Decode intervals in the run (an
idle host's acceptance is noise). Load kept honest: a host whose mean batch size is under half
or over twice the peers' median serves another traffic mix and is not judged.

Acceptance is per token (accepted / drafted, bonus excluded), the median of the run's
intervals with its 95% interval: the median, not a mean, because the interval comes with it
and one burst of odd prompts cannot move it.
"""

from __future__ import annotations

import statistics
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from acceptmon.detect.runstats import RunStats
from acceptmon.runs.rate import accept_rate
from acceptmon.text.printable import printable

#: The table's width, as the per-run tables'.
WIDTH = 80
#: Under this share of the peers' median a host is an outlier (the alert's threshold).
MARGIN = 0.8
#: Busy hosts of one config needed, the host included (3 peers).
MIN_HOSTS = 4
#: Decode intervals a run needs before its host counts.
MIN_INTERVALS = 20
#: Mean batch size against the peers' median outside which a host is not judged.
LOAD_BAND = (0.5, 2.0)

RULE = (
    f"outlier: acceptance under {MARGIN:.0%} of the median of the busy hosts of its config "
    f"({MIN_HOSTS} or more, each with {MIN_INTERVALS}+ Decode intervals), at a mean batch size "
    f"within {LOAD_BAND[0]:g}-{LOAD_BAND[1]:g}x of theirs"
)


@dataclass(frozen=True)
class Host:
    """One log's latest run as the fleet table shows it."""

    source: str
    run_id: str
    config_hash: str | None
    model: str | None
    draft: str | None
    intervals: int
    #: Median per-interval accept rate and its 95% interval.
    rate: tuple[float, float, float] | None
    #: Mean running requests per Decode interval, when the lines print it.
    load: float | None
    status: str = ""


@dataclass(frozen=True)
class Config:
    """Hosts whose latest run has one config, with their median and who is an outlier."""

    config_hash: str | None
    model: str | None
    draft: str | None
    hosts: tuple[Host, ...]
    median: float | None

    @property
    def outliers(self) -> list[str]:
        return [h.source for h in self.hosts if h.status == "outlier"]


def host_of(source: str, stats: RunStats) -> Host:
    run = stats.run
    m, slots = stats.median(), run.spec.slots
    rate = None
    if m is not None:
        point, low, high = (accept_rate(v, slots) for v in m)
        if point is not None and low is not None and high is not None:
            rate = (point, low, high)
    return Host(
        source=source,
        run_id=run.run_id,
        config_hash=run.config.hash if run.config else None,
        model=run.spec.model_path,
        draft=run.spec.draft_model_path,
        intervals=stats.intervals,
        rate=rate,
        load=stats.tokens / stats.intervals if stats.intervals and stats.tokens else None,
    )


def fleet(latest: Iterable[tuple[str, RunStats]]) -> list[Config]:
    """Group the logs' latest runs by config and mark each host by the peer rule."""
    groups: dict[tuple[str | None, str | None, str | None], list[Host]] = {}
    for source, stats in latest:
        h = host_of(source, stats)
        groups.setdefault((h.config_hash, h.model, h.draft), []).append(h)
    return [_judge(key, hosts) for key, hosts in groups.items()]


def _judge(key: tuple[str | None, str | None, str | None], hosts: list[Host]) -> Config:
    busy = [h for h in hosts if h.intervals >= MIN_INTERVALS and h.rate is not None]
    rates = [h.rate[0] for h in busy if h.rate is not None]
    median = statistics.median(rates) if rates else None
    loads = [h.load for h in busy if h.load is not None]
    load = statistics.median(loads) if loads else None
    judged = key[0] is not None and len(busy) >= MIN_HOSTS and median is not None
    marked = []
    for h in hosts:
        if h not in busy:
            status = "idle"
        elif not judged or median is None or h.rate is None:
            status = "unknown config" if key[0] is None else "too few peers"
        elif h.load is not None and load and not LOAD_BAND[0] <= h.load / load <= LOAD_BAND[1]:
            status = "other load"
        else:
            status = "outlier" if h.rate[0] < MARGIN * median else "ok"
        marked.append(replace(h, status=status))
    return Config(key[0], key[1], key[2], tuple(marked), median)


def plain(configs: list[Config]) -> str:
    """The fleet table within 80 columns: per config its hosts, their acceptance and status."""
    names = short_names([h.source for c in configs for h in c.hosts])
    out = ["fleet: each host against its peers of the same config", ""]
    pattern = next(iter(names.items()), ("", ""))
    if pattern[0] != pattern[1]:
        out += _wrap("hosts are " + pattern[0].replace(pattern[1], "HOST", 1), "")
        out.append("")
    for c in configs:
        median = f"{c.median:.0%}" if c.median is not None else "n/a"
        head = f"config {c.config_hash or 'unknown'}  model {c.model or '?'}  draft {c.draft or '?'}"
        out += _wrap(head, "")
        out.append(f"  {len(c.hosts)} hosts, peers' median acceptance {median}")
        out.append(f"  {'host':<22}{'run':<5}{'intervals':>9}  {'acceptance [95%]':<19}{'batch':>6}  status")
        for h in c.hosts:
            acc = f"{h.rate[0]:.0%} [{h.rate[1]:.0%}, {h.rate[2]:.0%}]" if h.rate else "n/a"
            load = f"{h.load:.1f}" if h.load is not None else "n/a"
            row = f"{_clip(names[h.source], 21):<22}{h.run_id:<5}{h.intervals:>9}  {acc:<19}{load:>6}  {h.status}"
            out.append("  " + row)
        out += _wrap("outliers: " + (", ".join(names[o] for o in c.outliers) or "none"), "  ")
        out.append("")
    out += _wrap(RULE, "")
    return "\n".join(printable(line) for line in out)


def _wrap(text: str, indent: str) -> list[str]:
    return textwrap.wrap(
        text,
        WIDTH,
        initial_indent=indent,
        subsequent_indent=indent + "  ",
        break_long_words=False,
        break_on_hyphens=False,
    )


def short_names(sources: list[str]) -> dict[str, str]:
    """Each source by what tells it from the others: the path parts all share in front and
    behind dropped (``ssh://gpu-3/var/log/sglang.log`` → ``gpu-3``)."""
    parts = [s.split("/") for s in sources]
    if len(parts) < 2:
        return {s: s for s in sources}
    front = back = 0
    while all(len(p) > front + back + 1 for p in parts) and len({p[front] for p in parts}) == 1:
        front += 1
    while all(len(p) > front + back + 1 for p in parts) and len({p[-1 - back] for p in parts}) == 1:
        back += 1
    short = {s: "/".join(p[front : len(p) - back]) for s, p in zip(sources, parts, strict=True)}
    return short if len(set(short.values())) == len(short) else {s: s for s in sources}


def as_json(configs: list[Config]) -> dict[str, Any]:
    names = short_names([h.source for c in configs for h in c.hosts])
    return {
        "rule": RULE,
        "configs": [
            {
                "config_hash": c.config_hash,
                "model": c.model,
                "draft_model": c.draft,
                "peer_median_accept_rate": c.median,
                "outliers": c.outliers,
                "hosts": [
                    {
                        "source": h.source,
                        "host": names[h.source],
                        "run_id": h.run_id,
                        "intervals": h.intervals,
                        "accept_rate_median": h.rate[0] if h.rate else None,
                        "accept_rate_ci": [h.rate[1], h.rate[2]] if h.rate else None,
                        "mean_running_requests": h.load,
                        "status": h.status,
                    }
                    for h in c.hosts
                ],
            }
            for c in configs
        ],
    }


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else "…" + text[-(width - 1) :]
