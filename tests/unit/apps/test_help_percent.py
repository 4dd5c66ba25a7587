"""Every ``--help`` reads as typed: argparse %-formats help strings but not descriptions or
epilogs, so a ``%%`` there is printed verbatim (issue 25 §10); and its prose fits the terminal."""

import argparse
from collections.abc import Iterator

import pytest

from acceptmon.cli import build_parser


def _helps(parser: argparse.ArgumentParser, path: str) -> Iterator[tuple[str, str]]:
    yield path, parser.format_help()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _helps(sub, f"{path} {name}")


def test_no_doubled_percent_in_any_help() -> None:
    doubled = [path for path, text in _helps(build_parser(), "acceptmon") if "%%" in text]
    assert doubled == []


def test_demo_and_runs_help_say_percent_once() -> None:
    helps = dict(_helps(build_parser(), "acceptmon"))
    assert "~47% " in " ".join(helps["acceptmon demo"].split())
    assert "95% interval" in " ".join(helps["acceptmon runs"].split())


def test_prose_in_every_help_is_wrapped_to_the_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """A terminal cuts an overlong line mid-word: every unindented line fits 80 columns
    (indented ones are tables and examples, kept as written)."""
    monkeypatch.setenv("COLUMNS", "80")
    long = [
        (path, line)
        for path, text in _helps(build_parser(), "acceptmon")
        for line in text.splitlines()
        if len(line) > 80 and not line[:1].isspace()
    ]
    assert long == []
