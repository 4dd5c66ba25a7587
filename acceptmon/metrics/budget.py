"""The series budget: per-source series are exported for at most ``limit`` sources.

Each file a glob matches is a source with about 45 series of its own (counters, gauges,
a 17-series histogram, parse errors by kind, run info). A glob matching 5,000 files made
``/metrics`` 23 MB and a scrape take 2-6 s, more than Prometheus's default timeout. The
sources exported are the first ``limit`` the store saw (its insertion order, which the
checkpoint keeps across restarts), so a source never drifts in and out of the scrape as
files come and go; the rest are still read, detected and notified (Slack, webhooks), and
only counted: ``acceptmon_sources_over_budget`` and ``acceptmon_sources_over_budget_lines_total``.
Their agent-side series (findings, draft config, settings) are not exported either.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from itertools import islice

from acceptmon.metrics.store import SourceStats


def exported(sources: Mapping[str, SourceStats], limit: int | None) -> Iterator[tuple[str, SourceStats]]:
    """The sources whose series a scrape shows (all of them when ``limit`` is None)."""
    return iter(sources.items()) if limit is None else islice(sources.items(), limit)


def hidden(sources: Mapping[str, SourceStats], limit: int | None) -> set[str]:
    """Names of the sources beyond the budget (none when every source is exported)."""
    if limit is None or len(sources) <= limit:
        return set()
    return set(islice(sources, limit, None))


def over_budget(sources: Mapping[str, SourceStats], limit: int | None) -> tuple[int, float]:
    """How many sources are beyond the budget, and the lines they have read."""
    if limit is None or len(sources) <= limit:
        return 0, 0.0
    rest = islice(sources.values(), limit, None)
    return len(sources) - limit, sum(s.counters["lines"] for s in rest)
