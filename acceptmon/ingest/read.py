"""SOURCEs read to their end: the one feeder of every command that reads logs once.

``oneshot``, ``runs``, ``report``, ``backfill``, ``read_log``/``read_runs`` and
``demo`` open their SOURCEs here (``opened``: the grammar of ``sources.files``,
``ssh://`` through ``sources.ssh.files``, imported only when a SOURCE needs
it) and feed each log's files, oldest first, through a pipeline from
``ingest.build``. A file that cannot be read is a problem reported back, never a stop.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from datetime import tzinfo

from acceptmon.detect.runstats import RunTable
from acceptmon.ingest import Pipeline
from acceptmon.ingest.build import build_pipeline
from acceptmon.ingest.garbage import young_garbage_kept
from acceptmon.ingest.joins import JoinClock
from acceptmon.ingest.scout import Scout, scouting
from acceptmon.model import SpecConfig
from acceptmon.runs.draft_config import draft_reader
from acceptmon.sources.base import FileReader
from acceptmon.sources.chunks import read_chunks
from acceptmon.sources.files import STDIN, InputError, Log, Opener, expand
from acceptmon.sources.lines import READ_SIZE
from acceptmon.sources.rotation import READ_ERRORS, open_local
from acceptmon.sources.stdin import StreamSource
from acceptmon.text.printable import printable


@contextmanager
def opened(
    sources: list[str], ssh_config: str | None = None, names: list[str] | None = None
) -> Iterator[tuple[list[Log], dict[str, FileReader]]]:
    """Every SOURCE as logs (local or over SFTP) and the remote logs' file readers by log name;
    InputError when one names nothing readable. Connections close on exit.

    ``names`` label the SOURCEs in the same position (``oneshot --name``): a SOURCE that
    names one log (a path, a rotated set, ``-``) takes its NAME; one naming several logs
    cannot (InputError); SOURCEs past the last NAME keep their own names.
    """
    logs: list[Log] = []
    readers: dict[str, FileReader] = {}
    with ExitStack() as stack:
        for i, source in enumerate(sources):
            reader: FileReader | None = None
            if source.startswith("ssh://"):
                from acceptmon.sources.ssh.files import open_remote

                remote = open_remote(source, ssh_config)
                stack.callback(remote.close)
                found, reader = remote.logs, remote.read_file
            else:
                found = expand(source)
            if names and i < len(names):
                found = [_named(source, found, names[i])]
            logs += found
            if reader is not None:
                readers.update(dict.fromkeys((lg.name for lg in found), reader))
        yield logs, readers


def _named(source: str, logs: list[Log], name: str) -> Log:
    if len(logs) != 1:
        raise InputError(f"{printable(source)}: names {len(logs)} logs; one name cannot label them all")
    return replace(logs[0], name=name)


def new_pipeline(
    tz: tzinfo,
    draft_config: list[str] | None = None,
    readers: dict[str, FileReader] | None = None,
    *,
    run_table: bool = True,
    state_dir: str | None = None,
    declared: SpecConfig | None = None,
) -> tuple[Pipeline, RunTable]:
    """The reading commands' pipeline (draft configs the agent recorded under ``state_dir``,
    else saved copies, else each log's own host) with a run table as its consumer (unless
    ``run_table`` is False: then the table stays empty). ``declared``: the speculative
    settings of runs whose start line is not in the log."""
    pipeline = build_pipeline(
        tz,
        draft=draft_reader(draft_config or [], readers or {}, state_dir),
        declared=(lambda _source: declared) if declared is not None else None,
    )
    table = RunTable(pipeline.tracker)
    if run_table:
        pipeline.consumers.append(table)
    return pipeline, table


def feed_file(
    pipeline: Pipeline, name: str, path: str, opener: Opener | None = None, scout: Scout | None = None
) -> str | None:
    """Feed one file (``-``: standard input) to its end as source ``name``; the problem met, if any.
    ``scout``: one sorting the local files' lines ahead (``ingest/scout.py``), given this one."""
    if path == STDIN:
        return _feed_stdin(pipeline, name)
    if scout is not None:
        scout.file(path)
    try:
        with (opener or open_local)(path) as stream:
            for chunk, overlong in read_chunks(name, stream, path, lazy=scout is not None):
                pipeline.presorted = scout.next() if scout is not None else None
                pipeline.feed(chunk)
                if overlong:
                    pipeline.count_overlong(name, overlong)
    except BrokenPipeError:  # our output's reader left (`| head`): not a problem of the input
        raise
    except READ_ERRORS as exc:
        return f"{printable(path)}: {getattr(exc, 'strerror', None) or exc}"
    finally:
        pipeline.presorted = None
    return None


def _feed_stdin(pipeline: Pipeline, name: str) -> str | None:
    if sys.stdin is None:
        return f"{STDIN}: no standard input"
    source = StreamSource(name, sys.stdin.buffer, read_size=READ_SIZE, poll_bytes=READ_SIZE, wait=True)
    overlong = 0
    try:
        while not source.ended:
            for chunk in source.poll():
                pipeline.feed(chunk)
            health = source.health()
            if health.overlong_lines > overlong:
                pipeline.count_overlong(name, health.overlong_lines - overlong)
                overlong = health.overlong_lines
    finally:
        source.close()
    health = source.health()
    return f"{STDIN}: {health.last_error}" if health.errors else None


def read_logs(
    pipeline: Pipeline, logs: list[Log], done: Callable[[str], None] | None = None, placed: bool = False
) -> list[str]:
    """Feed every log, each file in order (``done`` is told each path read); the problems met.
    ``placed``: a consumer reads chunks' lines anywhere (backfill's sampler), so a scout sends
    where each line starts too (``scout.start``)."""
    with young_garbage_kept():
        return _read_logs(pipeline, logs, done, placed)


def _read_logs(
    pipeline: Pipeline, logs: list[Log], done: Callable[[str], None] | None, placed: bool
) -> list[str]:
    problems = []
    # The local files are sorted ahead by one scout where a second core is free (``scout.py``).
    local = [(p, pipeline.zone(lg.name)) for lg in logs if lg.opener is None for p in lg.files if p != STDIN]
    with scouting(local, placed) as scout:
        for lg in logs:
            joins = JoinClock() if len(lg.files) > 1 else None
            if joins is not None:
                pipeline.consumers.append(joins)
            for path in lg.files:
                if joins is not None:
                    joins.next_file(lg.name, path)
                problem = feed_file(pipeline, lg.name, path, lg.opener, scout if lg.opener is None else None)
                if problem:
                    problems.append(problem)
                if done is not None:
                    done(path)
            if joins is not None:
                pipeline.consumers.remove(joins)
    return problems


def collect(
    logs: list[Log],
    tz: tzinfo,
    draft_config: list[str] | None = None,
    readers: dict[str, FileReader] | None = None,
    state_dir: str | None = None,
    declared: SpecConfig | None = None,
) -> tuple[Pipeline, RunTable, list[str]]:
    """Feed every log (each file of it in order) and return the run table and the problems met."""
    pipeline, table = new_pipeline(tz, draft_config, readers, state_dir=state_dir, declared=declared)
    return pipeline, table, read_logs(pipeline, logs)
