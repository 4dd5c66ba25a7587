"""``terminal.printable``: the one rule by which a file name is shown (issue 19 #1, #16)."""

from __future__ import annotations

import logging
import os

import pytest

from acceptmon.labels import name_bytes
from acceptmon.text.printable import PrintableArgs, printable

ALL_BYTES = os.fsdecode(bytes(range(1, 256)).replace(b"/", b""))


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("server.log", "server.log"),
        ("Qwen3 — 服务器.log", "Qwen3 — 服务器.log"),
        (os.fsdecode(b"server-\xff.log"), "server-\\xff.log"),
        ("a\nb\rc\td", "a\\nb\\rc\\td"),
        ("\x1b]52;c;aGk=\x07", "\\x1b]52;c;aGk=\\x07"),
        ("\x7f\x85\u2028\u202e", "\\x7f\\u0085\\u2028\\u202e"),
        ("\ud800", "\\ud800"),  # a lone surrogate that is no byte (a hand-written checkpoint)
        ("\U000e0001", "\\U000e0001"),
    ],
)
def test_printable(name: str, shown: str) -> None:
    assert printable(name) == shown


def test_every_byte_gives_printable_utf8_and_the_rule_is_idempotent() -> None:
    shown = printable(ALL_BYTES)
    assert shown.isprintable()
    shown.encode("utf-8")
    assert printable(shown) == shown
    assert name_bytes(ALL_BYTES) != name_bytes(shown)
    assert len({name_bytes(os.fsdecode(bytes([b]))) for b in range(256)}) == 256


def test_log_arguments_are_printable_but_the_template_is_not_touched() -> None:
    record = logging.LogRecord(
        "acceptmon",
        logging.INFO,
        __file__,
        1,
        "one:\n%s %r %d %s",
        ("a\nFAKE", "b", 3, ValueError("x")),
        None,
    )
    assert PrintableArgs().filter(record)
    assert record.getMessage() == "one:\na\\nFAKE 'b' 3 x"
