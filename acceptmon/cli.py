"""Command line: subcommands map flags to calls and return an exit code."""

from __future__ import annotations

import argparse
import logging
import os
import socket
import sys
import textwrap
import traceback
from collections.abc import Sequence
from datetime import tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from acceptmon import __version__, extras
from acceptmon.apps.agent import startup
from acceptmon.text.printable import printable_logs

if TYPE_CHECKING:
    from acceptmon.model import SpecConfig

EPILOG = """\
examples:
  acceptmon demo                                   replay the bundled EAGLE-3 incident
  acceptmon oneshot /var/log/sglang/server.log     Prometheus exposition to stdout
  acceptmon oneshot --format jsonl server.log      one JSON object per record
"""


class _Help(argparse.RawDescriptionHelpFormatter):
    """Descriptions and epilogs as written, but a line of prose longer than the terminal is
    wrapped at word boundaries (a terminal would cut it mid-word); indented lines (exit-status
    tables, aligned examples) and blank lines between paragraphs are kept as they are."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        out = []
        for line in text.splitlines():
            if len(indent + line) <= width or line[:1].isspace():
                out.append(indent + line)
            else:
                out.append(textwrap.fill(line, width, initial_indent=indent, subsequent_indent=indent))
        return "\n".join(out) + ("\n" if text.endswith("\n") else "")


def _zone(name: str | None) -> tzinfo | None:
    """``--timezone``'s zone (default this host's); None, with a one-line reason, if unknown."""
    from acceptmon import log_time

    try:
        return log_time.zone(name) if name else log_time.host_zone()
    except ValueError as exc:
        print(f"acceptmon: --timezone: {exc}", file=sys.stderr)
        return None


def _declared(args: argparse.Namespace) -> tuple[bool, SpecConfig | None]:
    """``--speculative KEY=N`` as run settings; (False, None) after saying what is wrong."""
    from acceptmon.runs.declared import declared_spec, parse_flags

    try:
        return True, declared_spec(parse_flags(args.speculative or []))
    except ValueError as exc:
        print(f"acceptmon: {exc}", file=sys.stderr)
        return False, None


class _Reading(TypedDict):
    """The flags every command that reads logs to their end takes alike, as its ``main``'s
    keywords: one place checks them for ``oneshot``, ``runs``, ``report`` and ``backfill``."""

    tz: tzinfo
    draft_config: list[str] | None
    ssh_config: str | None
    declared: SpecConfig | None


def _reading(args: argparse.Namespace) -> _Reading | None:
    """``--timezone``, ``--speculative``, ``--draft-config`` and ``--ssh-config``; None after
    saying what is wrong (the command then exits 2)."""
    tz = _zone(args.timezone)
    if tz is None:
        return None
    ok, declared = _declared(args)
    if not ok:
        return None
    return _Reading(tz=tz, draft_config=args.draft_config, ssh_config=args.ssh_config, declared=declared)


def _oneshot(args: argparse.Namespace) -> int:
    from acceptmon.apps import oneshot

    reading = _reading(args)
    if reading is None:
        return 2
    return oneshot.main(args.sources, fmt=args.format, names=args.name, year=args.year, **reading)


def _runs(args: argparse.Namespace) -> int:
    from acceptmon.apps import runs as runsview

    reading = _reading(args)
    if reading is None:
        return 2
    if args.from_url is not None:
        if args.follow:
            print(
                "acceptmon: --from prints the agent's runs once; it cannot be combined with --follow",
                file=sys.stderr,
            )
            return 2
        from acceptmon.apps.runs import remote

        return remote.main(args.from_url, args.sources, args.format)
    if not args.sources:
        print("acceptmon: runs needs a SOURCE (a log) or --from URL (a running agent)", file=sys.stderr)
        return 2
    if args.follow and args.format == "json":
        print(
            "acceptmon: --follow draws a live view; it cannot be combined with --format json", file=sys.stderr
        )
        return 2
    return runsview.main(
        args.sources, fmt=args.format, follow=args.follow, state_dir=args.state_dir, **reading
    )


def _report(args: argparse.Namespace) -> int:
    from acceptmon.apps import report

    if not args.output and not args.png:
        print("acceptmon: report: say where: -o report.html and/or --png DIR", file=sys.stderr)
        return 2
    reading = _reading(args)
    if reading is None:
        return 2
    return report.main(args.sources, out=args.output, png_dir=args.png, state_dir=args.state_dir, **reading)


def _backfill(args: argparse.Namespace) -> int:
    from acceptmon.apps import backfill

    reading = _reading(args)
    if reading is None:
        return 2
    if not 1 <= args.step <= 86400:
        print("acceptmon: --step: expected seconds from 1 to 86400", file=sys.stderr)
        return 2
    return backfill.main(
        args.sources,
        out=args.out,
        step=args.step,
        labels={"job": args.job, "instance": args.instance or f"{socket.gethostname()}:9469"},
        names=args.name,
        **reading,
    )


def _grafana_sync(args: argparse.Namespace) -> int:
    import os

    from acceptmon.apps import dashboard

    extras.require("grafana", "grafana sync")  # before asking for a token it could not use
    token = os.environ.get(args.token_env, "").strip()
    if not token:
        print(
            f"acceptmon: set {args.token_env} (or name another variable with --token-env) to a Grafana "
            "service-account token with Editor rights",
            file=sys.stderr,
        )
        return 2
    try:
        done = dashboard.sync(
            args.url, token, folder=args.folder, datasource=args.datasource, force=args.force
        )
    except dashboard.SyncError as exc:
        print(f"acceptmon: grafana sync: {exc}", file=sys.stderr)
        return 1
    if done.state == "kept":
        print(
            f"dashboard {dashboard.UID} was edited in Grafana since the last sync (version {done.version}); "
            "kept it. --force replaces it with acceptmon's.",
        )
        return dashboard.KEPT
    print(
        f"dashboard {dashboard.UID} {done.state} (version {done.version}) in folder {done.folder!r}, "
        f"data source {done.datasource!r}: {done.url}"
    )
    return 0


def _run(args: argparse.Namespace) -> int:
    from acceptmon.apps.agent import daemon
    from acceptmon.settings import SettingsError

    overrides = {
        "listen": args.listen,
        "state_dir": args.state_dir,
        "web_config_file": args.web_config_file,
        "max_exported_sources": args.max_exported_sources,
    }
    if args.from_end:
        overrides["read_from_beginning"] = False
    try:
        return daemon.run(args.config, args.sources, overrides)
    except SettingsError as exc:
        return _settings_refused(args.config, exc)
    except startup.StartupError as exc:
        print(f"acceptmon: {exc}", file=sys.stderr)
        return exc.code


def _settings_refused(path: str | None, exc: Exception) -> int:
    """How ``check-config``, ``run`` and ``notify-test`` report refused settings: one style,
    every problem, exit 2 (a SIGHUP reload logs the same ``SettingsError`` text)."""
    from acceptmon.text.printable import printable_lines

    where = f"{path}: " if path else ""
    print(printable_lines(f"acceptmon: {where}{exc}"), file=sys.stderr)
    return startup.SETTINGS


def _check_config(args: argparse.Namespace) -> int:
    from acceptmon.settings import SettingsError, load
    from acceptmon.text.printable import printable

    try:
        cfg = load(args.config, args.sources)
    except SettingsError as exc:
        return _settings_refused(args.config, exc)
    kinds = ", ".join(f"{s.name} ({s.kind})" for s in cfg.sources) or "none"
    print(printable(f"{args.config}: OK; listen {cfg.listen}, state {cfg.state_dir}; sources: {kinds}"))
    return 0


def _notify_test(args: argparse.Namespace) -> int:
    from acceptmon.notify import NotifySettings, send_test_message
    from acceptmon.settings import SettingsError, load

    try:
        cfg = load(args.config, require_sources=False)
    except SettingsError as exc:
        return _settings_refused(args.config, exc)
    ok, message = send_test_message(cfg.notify or NotifySettings())
    print(message, file=sys.stdout if ok else sys.stderr)
    return 0 if ok else 1


def _demo(args: argparse.Namespace) -> int:
    from acceptmon.apps import demo

    return demo.main(plain=args.plain)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="acceptmon",
        description="Watch speculative-decoding acceptance in SGLang, vLLM, llama.cpp and LMDeploy logs.",
        epilog=EPILOG,
        formatter_class=_Help,
    )
    parser.add_argument("--version", action="version", version=f"acceptmon {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug detail to stderr")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    one = sub.add_parser(
        "oneshot",
        help="read logs to the end and print metrics or records",
        description="Read logs to the end through the same pipeline the agent uses and print "
        "the Prometheus exposition the agent would serve (deterministic: no wall-clock values), "
        "or one JSON object per recognised record. A SOURCE is what `acceptmon runs` takes: a "
        "file, a glob (quote it; rotations such as server.log.1 and server.log.2.gz join their "
        "log, oldest first), '-' for standard input, or ssh://[user@]host[:port]/path-or-glob "
        "(read once over SFTP).",
        epilog="exit status: 0 read; 1 no file of any SOURCE could be read; 2 a SOURCE names "
        "nothing readable or a flag is invalid",
        formatter_class=_Help,
    )
    one.add_argument("sources", nargs="+", metavar="SOURCE", help="log file, glob, '-' or ssh:// URL")
    one.add_argument(
        "--format",
        choices=("prom", "jsonl", "findings"),
        default="prom",
        help="prom: the metrics the agent would serve (default); jsonl: one JSON object per record; "
        "findings: one JSON object per detector finding",
    )
    one.add_argument(
        "--name",
        action="append",
        metavar="NAME",
        help="source label for the SOURCE in the same position (default: the path or URL as given; "
        "a rotated set is one log and takes one NAME; a glob naming several logs cannot take one)",
    )
    one.add_argument(
        "--year",
        type=int,
        help="year of the first of vLLM's year-less timestamps; later ones follow across new year "
        "(default: the latest year that puts no line after the "
        "file's modification time)",
    )
    _log_flags(one)
    one.set_defaults(func=_oneshot)

    _add_runs(sub)
    _add_report(sub)
    _add_backfill(sub)
    _add_grafana(sub)

    run = sub.add_parser(
        "run",
        help="run the agent: follow logs, serve /metrics, detect drops, notify",
        description="Follow SGLang/vLLM logs live and serve Prometheus metrics, /api/findings and "
        "/api/runs. A SOURCE is a file path or glob (quote it), '-' for standard input, "
        "journald:UNIT, or ssh://[user@]host[:port]/path. Positions and counters are checkpointed "
        "in the state directory; SIGTERM checkpoints and exits, SIGHUP reloads the settings "
        "(a reload with invalid settings keeps the running ones).\n\n"
        "When lines are read: a request for /metrics or /api/* first has the agent read every "
        "line written before it (waiting at most 0.2 s, then serving what it has); files that "
        "are created, moved or deleted (rotation) are looked at at once; appended lines wake "
        "nothing, so without scrapes the detector and alerts see a line at the next poll, every "
        "poll_interval seconds (settings file; default 0.5: a longer interval costs less CPU, "
        "alerts later). A file quiet for 10 s is stat-ed every 5 s between scrapes.\n\n"
        "Series budget: each file a glob matches is a source with about 45 series of its own; "
        "/metrics exports them for the first max_exported_sources sources seen (default 500, "
        "a scrape under 1 s). Sources beyond it are still read, detected and notified (Slack, "
        "webhooks), but none of their series is exported (findings included); they are counted in "
        "acceptmon_sources_over_budget and acceptmon_sources_over_budget_lines_total.",
        epilog=startup.EPILOG,
        formatter_class=_Help,
    )
    run.add_argument("sources", nargs="*", metavar="SOURCE", help="log sources in addition to the config's")
    run.add_argument("--config", metavar="FILE", help="YAML config (see deploy/acceptmon.example.yaml)")
    run.add_argument("--listen", metavar="HOST:PORT", help="where to serve HTTP (default 127.0.0.1:9469)")
    run.add_argument(
        "--web.config.file",
        dest="web_config_file",
        metavar="FILE",
        help="exporter-toolkit web config (TLS, client certificates, basic auth) protecting /metrics "
        "and /api/*; /healthz stays open (see deploy/web-config.example.yml)",
    )
    run.add_argument(
        "--state-dir", metavar="DIR", help="checkpoints and run snapshots (default /var/lib/acceptmon)"
    )
    run.add_argument(
        "--max-exported-sources",
        type=int,
        metavar="N",
        help="series budget: export per-source series for at most N sources (default 500; see above)",
    )
    run.add_argument(
        "--from-end", action="store_true", help="with no checkpoint, start at the end of existing files"
    )
    run.set_defaults(func=_run)

    check = sub.add_parser(
        "check-config",
        help="validate a settings file and report every problem at once",
        description="Validate a settings file (and optional extra sources) with the same checks "
        "`run` and a SIGHUP reload make: what it accepts starts. Exit 2 listing every problem. "
        "Secrets such as webhook URLs are checked but never printed.",
    )
    check.add_argument("config", metavar="FILE")
    check.add_argument("sources", nargs="*", metavar="SOURCE")
    check.set_defaults(func=_check_config)

    nt = sub.add_parser(
        "notify-test",
        help="send one sample alert through the configured notifiers",
        description="Send one sample message to every notifier in the config's 'notify:' section, "
        "to check the wiring. Exit 0 if delivered.",
    )
    nt.add_argument("--config", metavar="FILE", required=True)
    nt.set_defaults(func=_notify_test)

    demo = sub.add_parser(
        "demo",
        help="replay the bundled EAGLE-3 incident log and print a per-run summary",
        description="Replay a bundled SGLang log of a real incident: an EAGLE-3 server at ~47% "
        "acceptance, a restart after a draft config change that drops it to ~19%, and a restart "
        "back. Needs no network and no setup beyond the install.",
    )
    demo.add_argument("--plain", action="store_true", help="plain text instead of a rich table")
    demo.set_defaults(func=_demo)
    return parser


def _log_flags(parser: argparse.ArgumentParser) -> None:
    """How SOURCEs are read: the flags oneshot, runs, report and backfill share."""
    parser.add_argument(
        "--draft-config",
        metavar="PATH",
        action="append",
        help="a saved copy of the draft model's config.json, as it was at a start: repeat it for "
        "each start in order (the last one counts for every later start). Default: the draft "
        "model path in server_args, read on the log's host",
    )
    parser.add_argument(
        "--timezone",
        metavar="ZONE",
        help="IANA zone the logs' wall-clock timestamps are in (default: this host's, TZ honoured)",
    )
    parser.add_argument(
        "--ssh-config",
        metavar="FILE",
        help="OpenSSH client config for ssh:// SOURCEs (default ~/.ssh/config; its known_hosts, "
        "IdentityFile and ProxyJump are honoured, unknown host keys refused)",
    )
    parser.add_argument(
        "--speculative",
        metavar="KEY=N",
        action="append",
        help="speculative settings for runs whose start line is not in the log (rotated away), as "
        "the agent's per-source speculative: takes them: num_steps, num_draft_tokens, topk; repeat "
        "for each key (e.g. --speculative num_steps=3). Turns accept lengths into rates and tokens",
    )


def _recorded_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--state-dir",
        metavar="DIR",
        help="an agent's state directory: each start's draft config.json as the agent recorded it "
        "then (matched by start time and draft path; --timezone as the agent's), before --draft-config "
        "or the file on disk today",
    )


def _add_runs(sub: Any) -> None:
    runs = sub.add_parser(
        "runs",
        help="per-run acceptance of a log and the verdict: is the latest run better?",
        description="Read logs once and print one row per server run (start, duration, Decode "
        "intervals, median accept len with its 95% interval, accept rate, speculative settings, "
        "the config change that opened it), then the latest run against the previous run with a "
        "different config: better, worse, same, or not enough data yet. A SOURCE is a file, a glob "
        "(quote it; rotations such as server.log.1 and server.log.2.gz join their log, oldest "
        "first), '-', or ssh://[user@]host[:port]/path-or-glob (read once over SFTP). Over several "
        "logs a fleet table follows: per config hash, each host's acceptance against the median "
        "of its peers, and the outliers (the rule of the AcceptanceBelowPeers alert).",
        epilog="exit status: 0 the latest run is not worse (or cannot be judged yet); 3 it is worse "
        "than its baseline (for any log); 2 a SOURCE names nothing readable, the --from agent cannot be "
        "asked, or a flag is invalid",
        formatter_class=_Help,
    )
    runs.add_argument("sources", nargs="*", metavar="SOURCE", help="log file, glob or '-'")
    runs.add_argument(
        "--from",
        dest="from_url",
        metavar="URL",
        help="a running agent (http(s)://host:port): print its /api/runs and /api/verdict instead of "
        "reading logs (SOURCEs, if given, keep to those sources); credentials from "
        "ACCEPTMON_API_TOKEN=USER:PASSWORD (its web config's basic auth)",
    )
    runs.add_argument(
        "--format", choices=("table", "json"), default="table", help="table (default) or json for scripts"
    )
    _log_flags(runs)
    _recorded_flag(runs)
    runs.add_argument(
        "--follow",
        action="store_true",
        help="keep reading and redraw as lines arrive (a live view; Ctrl-C ends it)",
    )
    runs.set_defaults(func=_runs)


def _add_report(sub: Any) -> None:
    rep = sub.add_parser(
        "report",
        help="an HTML report with plots: acceptance over time, per run, against batch size",
        description="Read logs once (the SOURCEs of 'acceptmon runs') and write one self-contained "
        "HTML file: per log, the run table and verdict, acceptance over time with run starts "
        "labelled by the config keys that changed and findings marked, per-run distributions, "
        "acceptance against batch size and, where logged, per draft position. Needs matplotlib "
        "(pip install 'acceptmon[report]').",
        epilog="exit status: 0 written; 1 cannot write; 2 bad SOURCE, missing -o/--png, or no matplotlib",
    )
    rep.add_argument("sources", nargs="+", metavar="SOURCE", help="log file, glob, '-' or ssh://host/path")
    rep.add_argument("-o", "--output", metavar="FILE", help="the HTML file to write")
    rep.add_argument("--png", metavar="DIR", help="also (or only) write the plots as PNG files here")
    _log_flags(rep)
    _recorded_flag(rep)
    rep.set_defaults(func=_report)


def _add_backfill(sub: Any) -> None:
    bf = sub.add_parser(
        "backfill",
        help="turn old logs into Prometheus history (OpenMetrics and TSDB blocks)",
        description="Read logs once and write the metrics the agent would have served, sampled every "
        "--step seconds of log time with the log's timestamps, as OpenMetrics (DIR/acceptmon.om, or "
        "DIR/acceptmon-0001.om ... in parts by time for a longer history), turned into TSDB blocks via "
        "'promtool tsdb create-blocks-from openmetrics' (DIR/blocks) while the logs are read, to copy into "
        "Prometheus's data directory. SOURCEs as for 'acceptmon runs'.",
        epilog="exit status: 0 written; 1 cannot write; 2 bad SOURCE or flag; 3 no promtool or it failed "
        "(the OpenMetrics file is written)",
    )
    bf.add_argument("sources", nargs="+", metavar="SOURCE", help="log file, glob, '-' or ssh://host/path")
    bf.add_argument("--out", required=True, metavar="DIR", help="where to write acceptmon*.om and blocks/")
    bf.add_argument("--step", type=float, default=60.0, metavar="SECONDS", help="sampling step (default 60)")
    bf.add_argument("--job", default="acceptmon", help="the scrape job's name, as live series carry it")
    bf.add_argument(
        "--instance", help="the agent's instance label, as live series carry it (default HOSTNAME:9469)"
    )
    bf.add_argument(
        "--name",
        action="append",
        metavar="NAME",
        help="the 'source' label for the SOURCE in the same position, as the agent's source 'name' "
        "(default: the path or URL as given; a glob naming several logs cannot take one)",
    )
    _log_flags(bf)
    bf.set_defaults(func=_backfill)


def _add_grafana(sub: Any) -> None:
    grafana = sub.add_parser(
        "grafana",
        help="Grafana: put the acceptmon dashboard into a Grafana through its API",
        description="Grafana integration. 'sync' creates or updates the bundled dashboard.",
    )
    gsub = grafana.add_subparsers(dest="grafana_command", required=True, metavar="COMMAND")
    gsync = gsub.add_parser(
        "sync",
        help="create or update the dashboard (stable uid 'acceptmon')",
        description="Create or update the acceptmon dashboard through Grafana's HTTP API and point it "
        "at a Prometheus data source (which must exist). A dashboard someone edited in Grafana since "
        "the last sync is kept unless --force; the update is version-checked.",
        epilog="exit status: 0 created, updated or unchanged; 1 Grafana unreachable or refused; 2 no token "
        "or no grafana-client (pip install 'acceptmon[grafana]'); 3 a newer edit in Grafana was kept",
    )
    gsync.add_argument("--url", required=True, help="Grafana's base URL, e.g. https://grafana.example.com")
    gsync.add_argument(
        "--token-env",
        default="ACCEPTMON_GRAFANA_TOKEN",
        metavar="VAR",
        help="environment variable holding the API token (default ACCEPTMON_GRAFANA_TOKEN); never printed",
    )
    gsync.add_argument("--folder", metavar="NAME", help="folder to put the dashboard in (created if missing)")
    gsync.add_argument(
        "--datasource", metavar="NAME", help="Prometheus data source (default: the default one)"
    )
    gsync.add_argument("--force", action="store_true", help="replace a dashboard edited in Grafana")
    gsync.set_defaults(func=_grafana_sync)


def main(argv: Sequence[str] | None = None) -> int:
    from acceptmon.text.printable import PrintableFormatter

    args = build_parser().parse_args(argv)
    stderr = logging.StreamHandler(sys.stderr)
    stderr.setFormatter(PrintableFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(
        # `runs` prints a report: only warnings belong beside it.
        level=logging.DEBUG if args.verbose else logging.WARNING if args.command == "runs" else logging.INFO,
        handlers=[stderr],
    )
    printable_logs()  # a file name never fakes a log line
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        _quiet_stdout()
        return 0
    except extras.MissingExtra as exc:
        print(f"acceptmon: {exc}", file=sys.stderr)
        return extras.EXIT
    except Exception as exc:  # the last resort: each known failure has its own message and code
        return _internal_error(exc, args.verbose)


def _quiet_stdout() -> None:
    """The reader went away (``| head``): exit quietly as Unix tools do, without Python's
    "Exception ignored" note when it flushes stdout at exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def _internal_error(exc: Exception, verbose: bool) -> int:
    """One line naming the exception type and where it was raised (its message may hold a
    secret, so it is not shown); the traceback only with ``--verbose``."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    print(
        f"acceptmon: internal error: {type(exc).__name__}{where}; please report it "
        "(run with --verbose for the traceback)",
        file=sys.stderr,
    )
    if verbose:
        logging.getLogger("acceptmon").error("traceback", exc_info=exc)
    return startup.RUNTIME


if __name__ == "__main__":
    sys.exit(main())
