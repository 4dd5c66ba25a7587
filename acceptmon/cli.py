"""Command line: subcommands map flags to calls and return an exit code."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from acceptmon import __version__

EPILOG = """\
examples:
  acceptmon demo                                   replay the bundled EAGLE-3 incident
  acceptmon oneshot /var/log/sglang/server.log     Prometheus exposition to stdout
  acceptmon oneshot --format jsonl server.log      one JSON object per record
"""


def _oneshot(args: argparse.Namespace) -> int:
    from acceptmon import oneshot
    from acceptmon.pipeline import Pipeline

    pipeline = Pipeline(year_hint=oneshot.year_flag(args.year) if args.year else oneshot.mtime_hint)
    if args.format == "jsonl":
        pipeline.sinks.append(oneshot.write_jsonl(sys.stdout))
    names = args.name or None
    problems = oneshot.run_files(pipeline, args.paths, names)
    if args.format == "prom":
        sys.stdout.write(oneshot.prom(pipeline))
    for problem in problems:
        print(f"acceptmon: cannot read {problem}", file=sys.stderr)
    return 1 if problems and len(problems) == len(args.paths) else 0


def _demo(args: argparse.Namespace) -> int:
    from acceptmon import demo

    return demo.main(plain=args.plain)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="acceptmon",
        description="Watch speculative-decoding acceptance in SGLang and vLLM logs.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"acceptmon {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug detail to stderr")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    one = sub.add_parser(
        "oneshot",
        help="read log files to the end and print metrics or records",
        description="Read log files to the end through the same pipeline the agent uses and print "
        "the Prometheus exposition the agent would serve (deterministic: no wall-clock values), "
        "or one JSON object per recognised record.",
    )
    one.add_argument("paths", nargs="+", metavar="PATH", help="log files; '-' reads standard input")
    one.add_argument(
        "--format", choices=("prom", "jsonl"), default="prom", help="output format (default: prom)"
    )
    one.add_argument(
        "--name",
        action="append",
        metavar="NAME",
        help="source label for the PATH in the same position (default: the path as given)",
    )
    one.add_argument(
        "--year",
        type=int,
        help="year for vLLM's year-less timestamps (default: from each file's modification time)",
    )
    one.set_defaults(func=_oneshot)

    demo = sub.add_parser(
        "demo",
        help="replay the bundled EAGLE-3 incident log and print a per-run summary",
        description="Replay a bundled SGLang log of a real incident: an EAGLE-3 server at ~47%% "
        "acceptance, a restart after a draft config change that drops it to ~19%%, and a restart "
        "back. Needs no network and no setup beyond the install.",
    )
    demo.add_argument("--plain", action="store_true", help="plain text instead of a rich table")
    demo.set_defaults(func=_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
