"""``acceptmon runs SOURCE…``: one row per server run and the verdict "is it better now?".

Reads each SOURCE once to its end through the same pipeline as the agent and
``oneshot`` (same parser, run tracking, redaction and draft-config snapshots),
then prints, per log, the runs with their acceptance and the config change
that opened each, and a verdict for the latest run against the run before it
with a different config. Over several logs, a fleet table follows (``fleet``): per
config, the hosts, their acceptance and the outliers against their peers. The exit status carries the verdict so a deploy
script can gate on it: 0 not worse, 3 worse somewhere, 2 a SOURCE names
nothing readable.
"""

from __future__ import annotations

import json
import sys
from datetime import tzinfo

from acceptmon.apps.runs import fleet
from acceptmon.detect import table as render
from acceptmon.detect.runstats import RunTable, run_json, verdict_json
from acceptmon.ingest import Pipeline
from acceptmon.ingest.generated import Generated, costed
from acceptmon.ingest.read import new_pipeline, opened, read_logs
from acceptmon.model import SpecConfig
from acceptmon.sources.base import FileReader
from acceptmon.sources.files import InputError, Log
from acceptmon.text.printable import printable

#: Exit status when the latest run of some log is worse than its baseline.
WORSE = 3
#: Exit status when a SOURCE names nothing readable.
BAD_SOURCE = 2


def _notes(pipeline: Pipeline, table: RunTable, source: str) -> list[str]:
    notes = []
    if any(
        s.run.config is not None and s.run.config.draft_config is None and s.run.spec.draft_model_path
        for s in table.of(source)
    ):
        notes.append(
            "the draft model's config.json was not found, or changed after the run started: changes "
            "inside it cannot be seen "
            "(point --draft-config at a saved copy, or --state-dir at the agent's state directory)"
        )
    errors = int(pipeline.store.stats(source).counters["parse_errors"])
    if errors:
        notes.append(f"{errors} lines could not be used (see acceptmon oneshot for the counts by kind)")
    return notes


def main(
    sources: list[str],
    *,
    fmt: str,
    tz: tzinfo,
    draft_config: list[str] | None = None,
    follow: bool = False,
    ssh_config: str | None = None,
    state_dir: str | None = None,
    declared: SpecConfig | None = None,
) -> int:
    try:
        with opened(sources, ssh_config) as (logs, readers):
            return _report(
                logs,
                fmt=fmt,
                tz=tz,
                draft_config=draft_config,
                follow=follow,
                ssh_config=ssh_config,
                readers=readers,
                state_dir=state_dir,
                declared=declared,
            )
    except InputError as exc:
        print(f"acceptmon: {printable(str(exc))}", file=sys.stderr)
        return BAD_SOURCE


def _report(
    logs: list[Log],
    *,
    fmt: str,
    tz: tzinfo,
    draft_config: list[str] | None,
    follow: bool,
    ssh_config: str | None,
    readers: dict[str, FileReader],
    state_dir: str | None,
    declared: SpecConfig | None,
) -> int:
    if follow:
        from acceptmon.apps.runs.live import follow_logs

        worse = follow_logs(
            logs,
            tz,
            draft_config,
            ssh_config=ssh_config,
            readers=readers,
            state_dir=state_dir,
            declared=declared,
        )
        return WORSE if worse else 0
    pipeline, table = new_pipeline(tz, draft_config, readers, state_dir=state_dir, declared=declared)
    generated = Generated(pipeline.tracker)
    pipeline.consumers.append(generated)
    problems = read_logs(pipeline, logs)
    for problem in problems:
        print(f"acceptmon: cannot read {printable(problem)}", file=sys.stderr)
    if len(problems) >= sum(len(lg.files) for lg in logs):
        return BAD_SOURCE  # not one file could be read: no table is an answer a gate may pass on
    names = [lg.name for lg in logs]
    verdicts = {name: costed(table.verdict(name), generated.tokens, name) for name in names}
    latest = [(n, runs[-1]) for n in names if (runs := table.of(n))]
    configs = fleet.fleet(latest) if len(names) > 1 else []
    if fmt == "json":
        doc = [
            {
                "source": n,
                "runs": [run_json(s) for s in table.of(n)],
                "verdict": verdict_json(verdicts[n]),
            }
            for n in names
        ]
        # One top level however many logs a SOURCE names: a script never guesses the shape
        # (one log: no fleet to compare, so no configs).
        out = {"sources": doc, "fleet": fleet.as_json(configs)}
        print(json.dumps(out, indent=2, allow_nan=False, default=str))
    else:
        blocks = [render.plain(n, table.of(n), verdicts[n], _notes(pipeline, table, n)) for n in names]
        if configs:
            blocks.append(fleet.plain(configs))
        print("\n\n".join(blocks))
    worse = any(v is not None and (v.state == "worse") for v in verdicts.values())
    return WORSE if worse else 0
