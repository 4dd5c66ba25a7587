"""Every regex that sees untrusted text runs in linear time on adversarial lines.

Timed as a ratio to a plain scan of the same line, and checked for growth:
doubling the line must roughly double the time (quadratic would quadruple).
Times are this thread's CPU time, so other processes on a busy CI machine do
not inflate one measurement against its peer.
Before issue 14 a 20 KB line of blanks took 24 s in the prefix parser.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

import pytest

from acceptmon.ingest import bulk as fastpath
from acceptmon.parse import layouts, line, llamacpp, prefix, server_args, sglang, vllm
from acceptmon.testing.synth import decode_line

N = 100_000


def _learned_decode() -> re.Pattern[str]:
    from datetime import datetime

    body = decode_line(datetime(2026, 1, 1), 2.0).split("Decode batch", 1)[1]
    shape = layouts.compile_shape(body.replace("cuda graph: True", "cuda graph: True, odd: x"))
    assert shape is not None
    return re.compile(shape[0])


REGEXES: dict[str, tuple[re.Pattern[str], str]] = {
    "prefix._BRACKET": (prefix._BRACKET, "finditer"),
    "prefix._PYLOG": (prefix._PYLOG, "match"),
    "prefix._GPU": (prefix._GPU, "search"),
    "prefix._PLAIN": (prefix._PLAIN, "fullmatch"),
    "prefix.ANSI": (prefix.ANSI, "sub"),
    "sglang._REPEATED": (sglang._REPEATED, "search"),
    "sglang._MIXED": (sglang._MIXED, "match"),
    "sglang._ADAPTIVE": (sglang._ADAPTIVE, "search"),
    "line.OTHER": (line.OTHER, "search"),
    "line.REQUEST": (line.REQUEST, "search"),
    "line.ENTRY": (line.ENTRY, "match"),
    "fastpath.EVENTS": (fastpath.EVENTS, "search"),
    "fastpath._CONTINUED": (fastpath._CONTINUED, "match"),
    "vllm._KEYS": (vllm._KEYS, "finditer"),
    "vllm._VALUE": (vllm._VALUE, "finditer"),
    "vllm._PREFIX_TS": (vllm._PREFIX_TS, "search"),
    "vllm._ENGINE": (vllm._ENGINE, "search"),
    "vllm._PROC": (vllm._PROC, "findall"),
    "server_args._ANGLE_REPR": (server_args._ANGLE_REPR, "sub"),
    "llamacpp._LINE": (llamacpp._LINE, "search"),
    "llamacpp._REL_PREFIX": (llamacpp._REL_PREFIX, "match"),
    "llamacpp._HEAD": (llamacpp._HEAD, "match"),
    "llamacpp._BUILD": (llamacpp._BUILD, "search"),
    "llamacpp._QUOTED": (llamacpp._QUOTED, "search"),
    "llamacpp._SLOTS": (llamacpp._SLOTS, "search"),
    "sglang._RATES": (sglang._RATES, "search"),
    "layouts._BRACKETED": (re.compile(layouts._BRACKETED), "match"),
    "layouts.learned": (_learned_decode(), "fullmatch"),
}

#: Worst cases for backtracking: long blank runs after a start, near-matches repeated.
SHAPES: dict[str, Callable[[int], str]] = {
    "blanks": lambda n: "[" + " " * n + "x",
    "bracket_blanks": lambda n: ("[ " + " " * 50) * (n // 52),
    "ranks": lambda n: "[ " + "TP0 " * (n // 4),
    "digits": lambda n: "9" * n + "x",
    "repeated": lambda n: ". #running-req: 1, x: " + " " * n + "[repeated 2x across",
    "commas": lambda n: "[1," * (n // 3),
    "quotes": lambda n: "<'" * (n // 2),
    "pylog": lambda n: "2026-01-01 00:00:00 INFO [ " + "TP0" * (n // 3),
    "proc": lambda n: "(" + "a_" * (n // 2),
    "numbers": lambda n: "1.1e" * (n // 4),
    "llama_build": lambda n: "build: 1 (a) with " * (n // 18),
    "llama_quote": lambda n: "loading model '" * (n // 15),
    "llama_head": lambda n: "srv " + " " * n + "x",
    "positions": lambda n: "(per-position): [" + "0.5, " * (n // 5),
}


def _best(fn: Callable[[], object], repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.thread_time()
        fn()
        best = min(best, time.thread_time() - t)
    return best


def _run(rx: re.Pattern[str], how: str, text: str) -> Callable[[], object]:
    if how == "finditer":
        return lambda: sum(1 for _ in rx.finditer(text))
    if how == "sub":
        return lambda: rx.sub("", text)
    return lambda: getattr(rx, how)(text)


def _ratio(rx: re.Pattern[str], how: str, make: Callable[[int], str], n: int) -> float:
    text = make(n)
    baseline = _best(lambda: re.search("zzz", text)) + _best(lambda: text.count(" "))
    return _best(_run(rx, how, text)) / max(baseline, 1e-7)


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("name", sorted(REGEXES))
def test_regex_is_linear(name: str, shape: str) -> None:
    rx, how = REGEXES[name]
    make = SHAPES[shape]
    small = _ratio(rx, how, make, N)
    for _ in range(3):  # a busy machine inflates one measurement, never every one
        if small < 300:
            break
        small = min(small, _ratio(rx, how, make, N))
    assert small < 300, f"{name} on {shape}: {small:.0f}x a plain scan"  # the old ones: >5,000x at 5 KB
    one, two = _run(rx, how, make(N)), _run(rx, how, make(2 * N))
    growth = []
    for _ in range(3):  # a quadratic regex grows 4x every time; a busy machine only sometimes
        t1, t2 = _best(one, 5), _best(two, 5)
        if t1 < 2e-4:  # below that, timer noise dominates and the bound above is the check
            return
        growth.append(t2 / t1)
        if growth[-1] < 3:
            return
    raise AssertionError(f"{name} on {shape}: doubling the line took {min(growth):.1f}x the time")


def test_whole_parser_is_linear_on_a_line_of_blanks() -> None:
    """The regression itself: the general parser on a long hostile line."""
    parser = line.LineParser("s")
    lines = {n: "[" + " " * n + "Decode batch, " + " " * n + "x" for n in (N, 2 * N)}
    t1 = _best(lambda: parser.parse(lines[N], 1))  # CPU seconds (see _best)
    t2 = _best(lambda: parser.parse(lines[2 * N], 1))
    assert t1 < 0.5 and t2 / max(t1, 1e-4) < 6
