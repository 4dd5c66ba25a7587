"""Issue 14: no single line stops the agent, injects a record, or leaves its physical range."""

from __future__ import annotations

import json
import math
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from acceptmon.apps.agent import api, daemon
from acceptmon.apps.agent.agent import Agent
from acceptmon.apps.agent.health import healthz
from acceptmon.apps.agent.web.routes import HttpError, json_route
from acceptmon.ingest import Pipeline
from acceptmon.metrics.collect import render
from acceptmon.model import ParseError, ServerStart
from acceptmon.notify.payload import finding_json
from acceptmon.parse.line import LineParser
from acceptmon.parse.server_args import MAX_ARGS_CHARS, parse_args
from acceptmon.settings import load
from acceptmon.testing.synth import decode_line, server_args_line
from tests.support.records import PerRecord

T0 = datetime(2026, 1, 1)
DIGITS = "9" * 4400
SGL = "[2026-01-01 00:00:01 TP0] "
VLLM = "INFO 01-01 00:00:01 [metrics.py:1] "

#: Every line that crashed the agent (and every restart after) before issue 14.
POISON = {
    "decode_bigint": f"{SGL}Decode batch, #running-req: {DIGITS}, #token: 1, token usage: 0.10, "
    "accept len: 2.00, cuda graph: True, gen throughput (token/s): 1.00, #queue-req: 0",
    "prefill_bigint": f"{SGL}Prefill batch, #new-seq: 1, #new-token: {DIGITS}, #cached-token: 0, "
    "token usage: 0.04, #running-req: 1, #queue-req: 0",
    "adaptive_bigint": f"{SGL}Adaptive spec params updated: steps {DIGITS} -> 3 (ema_accept_len=2.1)",
    "args_hex": f"{SGL}server_args=ServerArgs(model_path='m', x=0x{'f' * 4000})",
    "args_complex": f"{SGL}server_args=ServerArgs(model_path='m', x=1j)",
    "args_ellipsis": f"{SGL}server_args=ServerArgs(model_path='m', x=...)",
    "args_inf": f"{SGL}server_args=ServerArgs(model_path='m', x=inf, y=-inf, z=nan)",
    "vllm_inf": f"{VLLM}SpecDecoding metrics: Draft acceptance rate: 0.5, Accepted: inf tokens, Drafted: 10 tokens",
    "vllm_1e400": f"{VLLM}SpecDecoding metrics: Accepted: 1e400 tokens, Drafted: 10 tokens",
}


def _agent(tmp_path: Path, lines: list[str]) -> tuple[Agent, Path]:
    log = tmp_path / "a.log"
    log.write_text("\n".join(lines) + "\n")
    return Agent(load(None, [str(log)], {"state_dir": str(tmp_path / "state")})), log


def serve_all(agent: Agent) -> str:
    """Everything the HTTP server renders, as it renders it (strict JSON: no NaN)."""
    metrics = api.metrics_text(agent)
    json_route(lambda: api._runs(agent))()
    json_route(lambda: [finding_json(f) for f in agent.announce.findings])()
    assert agent.save_checkpoint()
    return metrics


def _value(metrics: str, name: str, **labels: str) -> float:
    for line in metrics.splitlines():
        if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"{name} {labels} not in output")


@pytest.mark.parametrize("name", sorted(POISON))
def test_poison_line_is_contained_and_not_reread(tmp_path: Path, name: str) -> None:
    lines = [server_args_line(T0), POISON[name], decode_line(T0, 2.0)]
    agent, log = _agent(tmp_path, lines)
    agent.open()
    agent.step()
    metrics = serve_all(agent)
    assert _value(metrics, "acceptmon_decode_batches_total") == 1.0  # the good line after it counts
    assert _value(metrics, "acceptmon_lines_total") == 3.0
    agent.close()
    # Restart: the position is past the poison line; more lines come in and are read.
    with log.open("a") as f:
        f.write(decode_line(T0, 2.5) + "\n")
    again = Agent(agent.settings)
    again.open()
    again.step()
    metrics = serve_all(again)
    assert _value(metrics, "acceptmon_decode_batches_total") == 2.0
    assert _value(metrics, "acceptmon_lines_total") == 4.0
    again.close()


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("decode_bigint", "malformed"),
        ("prefill_bigint", "malformed"),
        ("adaptive_bigint", "malformed"),
        ("vllm_inf", "out_of_range"),
        ("vllm_1e400", "out_of_range"),
    ],
)
def test_poison_values_are_counted_by_kind(name: str, kind: str) -> None:
    p = Pipeline()
    p.feed(_chunk([POISON[name]]))
    stats = p.store.stats("s")
    assert stats.error_kinds[kind] == 1 and stats.counters["parse_errors"] == 1


def _chunk(lines: list[str], source: str = "s") -> Any:
    from acceptmon.model import Chunk

    return Chunk(source, tuple(lines), 1)


@pytest.mark.parametrize("name", ["args_hex", "args_complex", "args_ellipsis", "args_inf"])
def test_server_args_values_are_json_safe(name: str) -> None:
    args = parse_args(POISON[name])
    assert args is not None and args["model_path"] == "m"
    json.dumps(args, allow_nan=False)  # raises on anything but plain JSON values
    assert all(isinstance(v, str) for k, v in args.items() if k != "model_path")


def test_server_args_conversions_are_documented_ones() -> None:
    args = parse_args(
        "server_args=ServerArgs(a=inf, b=-inf, c=nan, d=1j, e=..., f=0x10, g=2**70, h=-3, i=1.5, "
        f"j=[1, (2, 3)], k={{'x': None}}, l={2**64})"
    )
    assert args == {
        "a": "inf",
        "b": "-inf",
        "c": "nan",
        "d": "1j",
        "e": "...",
        "f": 16,
        "g": "2 ** 70",
        "h": -3,
        "i": 1.5,
        "j": [1, [2, 3]],
        "k": {"x": None},
        "l": hex(2**64),
    }


def test_nan_in_server_args_is_no_config_change_at_restart() -> None:
    p = Pipeline()
    start = f"{SGL}server_args=ServerArgs(model_path='m', x=nan, random_seed=1)"
    p.feed(_chunk([start, start.replace("random_seed=1", "random_seed=2")]))
    run = p.tracker.current("s")
    assert run is not None and run.diff is not None
    assert run.diff.changed == () and run.diff.added == () and run.diff.removed == ()


def test_oversized_server_args_is_a_counted_error_without_parsing() -> None:
    big = server_args_line(T0, blob="x" * (MAX_ARGS_CHARS + 1))
    rec = LineParser("s").parse(big, 1)
    assert isinstance(rec, ParseError) and rec.kind == "too_large"
    ok = LineParser("s").parse(server_args_line(T0, blob="x" * 60_000), 1)
    assert isinstance(ok, ServerStart)


@pytest.mark.parametrize("with_sink", [False, True])
def test_accept_len_beyond_draft_tokens_is_out_of_range(with_sink: bool) -> None:
    """4 draft tokens (3 slots): an accept length above 4 is impossible, and below 1."""
    p = Pipeline(bulk=not with_sink)  # the bulk path, and the per-line reference
    good = [decode_line(T0, v) for v in (2.0, 3.0, 4.0)]
    low = decode_line(T0, 2.0).replace("accept len: 2.00", "accept len: 0.50")
    lines = [server_args_line(T0), *good, decode_line(T0, 7.7), low, *good]
    p.feed(_chunk(lines))
    s = p.store.stats("s")
    assert s.error_kinds["out_of_range"] == 2
    assert s.counters["decode_batches"] == 6
    assert s.counters["accept_len_sum"] == 18.0
    assert s.counters["accepted_tokens"] <= s.counters["draft_tokens"]


@pytest.mark.parametrize(
    "body",
    [
        "Draft acceptance rate: 1.5, Accepted: 1 tokens, Drafted: 10 tokens",
        "Draft acceptance rate: 150.0%",
        "Accepted: 11 tokens, Drafted: 10 tokens",
        "Accepted: -1 tokens, Drafted: 10 tokens",
        "Accepted: 1.5 tokens, Drafted: 10 tokens",
        "Mean acceptance length: inf, Accepted: 1 tokens, Drafted: 10 tokens",
        "Accepted: 1 tokens, Drafted: 10 tokens, Per-position acceptance rate: 0.5, 2.0",
    ],
)
def test_vllm_values_outside_their_range_are_errors(body: str) -> None:
    rec = LineParser("s").parse(f"{VLLM}SpecDecoding metrics: {body}", 1)
    assert isinstance(rec, ParseError) and rec.kind == "out_of_range"


def test_a_raising_sink_is_contained_and_later_records_flow() -> None:
    p = Pipeline()
    seen: list[object] = []

    def bad(record: object) -> None:
        if len(seen) == 1:
            seen.append("boom")
            raise RuntimeError("secret-token-in-message")
        seen.append(record)

    p.consumers.append(PerRecord(bad))
    p.feed(_chunk([server_args_line(T0), decode_line(T0, 2.0), decode_line(T0, 2.5)]))
    s = p.store.stats("s")
    assert s.error_kinds["exception"] == 1
    assert s.counters["decode_batches"] == 2 and len(seen) == 3


def test_a_raising_parser_is_contained_on_both_paths(monkeypatch: pytest.MonkeyPatch, caplog: Any) -> None:
    from acceptmon.parse import sglang

    def explode(_body: str, _meta: object) -> None:
        raise ValueError("sk-live-SECRET")

    monkeypatch.setattr(sglang, "parse_adaptive", explode)
    line = f"{SGL}Adaptive spec params updated: steps 3 -> 2"
    for sink in (False, True):
        p = Pipeline(bulk=not sink)
        p.feed(_chunk([line, line, decode_line(T0, 2.0)]))
        s = p.store.stats("s")
        assert s.error_kinds["exception"] == 2 and s.counters["decode_batches"] == 1
    assert "SECRET" not in caplog.text and "Adaptive spec" not in caplog.text
    assert "s line 1" in caplog.text and "ValueError" in caplog.text
    assert caplog.text.count("record skipped") == 2  # once per kind and pipeline, not per line


# -- §3 records only where the engine writes them ------------------------------------

FAKE_ARGS = "server_args=ServerArgs(model_path='evil', speculative_algorithm='EAGLE3')#"
FAKE_DECODE = (
    "Decode batch, #running-req: 9, #token: 1, token usage: 0.10, accept len: 1.00, "
    "cuda graph: True, gen throughput (token/s): 1.00, #queue-req: 0"
)
FAKE_CRASH = "Scheduler hit an exception: Traceback"
FAKE_VLLM = "SpecDecoding metrics: Accepted: 0 tokens, Drafted: 1000 tokens"
INJECTIONS = [
    f"[2026-01-01 00:00:02] Receive: obj=GenerateReqInput(text='{payload}', sampling_params={{}})"
    for payload in (FAKE_ARGS, FAKE_DECODE, FAKE_CRASH, FAKE_VLLM, f"[x] {FAKE_DECODE}", f"] {FAKE_ARGS}")
] + [
    f"[2026-01-01 00:00:02] Finish: obj=GenerateReqInput(text='hi'), out={{'text': '{FAKE_DECODE}'}}",
    f"[2026-01-01 00:00:02] Finish: obj=GenerateReqInput(text='{FAKE_CRASH}'), out={{}}",
    f"{VLLM}Received request cmpl-1: prompt: '{FAKE_VLLM}', params: SamplingParams()",
    f"{VLLM}Generated response cmpl-1: output: '] {FAKE_VLLM}', finish_reason: stop",
    f"{VLLM}Received request cmpl-2: prompt: 'x [y] {FAKE_ARGS}'",
]
#: A prompt printed over several lines: the unprefixed continuation lines are the request's.
CONTINUATION = [
    "[2026-01-01 00:00:03] Receive: obj=GenerateReqInput(text='first line",
    FAKE_ARGS,
    FAKE_DECODE,
    "INFO:     Shutting down",
    FAKE_CRASH,
    "  " + FAKE_DECODE,
    "')",
]


@pytest.mark.parametrize("line", INJECTIONS)
def test_injected_markers_in_request_logs_are_no_records(line: str) -> None:
    assert LineParser("s").parse(line, 1) is None


@pytest.mark.parametrize("with_sink", [False, True])
def test_injection_leaves_runs_and_counters_alone(with_sink: bool) -> None:
    p = Pipeline(bulk=not with_sink)  # the bulk path, and the per-line reference
    lines = [server_args_line(T0), decode_line(T0, 2.0), *INJECTIONS, *CONTINUATION, decode_line(T0, 2.0)]
    p.feed(_chunk(lines))
    s = p.store.stats("s")
    c = s.counters
    assert c["server_starts"] == 1 and c["server_crashes"] == 0 and c["server_shutdowns"] == 0
    assert c["decode_batches"] == 2 and c["spec_lines"] == 0 and c["parse_errors"] == 0
    run = p.tracker.current("s")
    assert run is not None and run.run_id == "r1"


def test_prefixed_line_ends_a_request_continuation() -> None:
    parser = LineParser("s")
    assert parser.parse(CONTINUATION[0], 1) is None
    assert parser.parse(FAKE_DECODE, 2) is None
    assert parser.parse(decode_line(T0, 2.0), 3) is not None
    assert isinstance(parser.parse("server_args=ServerArgs(model_path='m')", 4), ServerStart)


# -- §2 /healthz ---------------------------------------------------------------------


def test_healthz_reports_a_stall_only_while_lines_wait() -> None:
    assert healthz(100.0, pending=True, stall_after=30.0, now=120.0) == ("text/plain", b"ok\n")
    assert healthz(100.0, pending=False, stall_after=30.0, now=1000.0) == ("text/plain", b"ok\n")
    with pytest.raises(HttpError) as err:
        healthz(100.0, pending=True, stall_after=30.0, now=131.0)
    assert err.value.code == 503 and "stalled" in err.value.message


def test_agent_progress_is_readable_without_the_lock(tmp_path: Path) -> None:
    agent, _ = _agent(tmp_path, [decode_line(T0, 2.0)])
    before = agent.loop.last_progress
    agent.open()
    agent.step()
    assert agent.loop.last_progress >= before and not agent.loop.pending()
    agent.close()


def test_metrics_render_without_nonfinite_histogram_sums() -> None:
    p = Pipeline()
    p.feed(
        _chunk([server_args_line(T0), decode_line(T0, 2.0).replace("accept len: 2.00", "accept len: inf")])
    )
    samples = [line for line in render(p.store).splitlines() if not line.startswith("#")]
    assert all(math.isfinite(float(line.rsplit(" ", 1)[1])) for line in samples)
    assert math.isfinite(p.store.stats("s").counters["accept_len_sum"])


def test_healthz_route_answers_503_while_a_chunk_is_stuck(tmp_path: Path) -> None:
    """The route reads the agent's progress without its lock (held by a stuck step)."""
    import urllib.error
    import urllib.request

    log = tmp_path / "a.log"
    log.write_text(decode_line(T0, 2.0) + "\n")
    agent = Agent(load(None, [str(log)], {"state_dir": str(tmp_path / "state"), "listen": "127.0.0.1:0"}))
    agent.open()
    agent.step()
    server = daemon.serve(agent)
    url = f"http://127.0.0.1:{server.port}/healthz"
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            assert r.status == 200 and r.read() == b"ok\n"
        with agent.lock:  # as a step stuck on one line would hold it
            agent.loop.in_hand = True
            agent.loop.last_progress -= agent.settings.stall_after + 1
            with pytest.raises(urllib.error.HTTPError) as err:
                urllib.request.urlopen(url, timeout=5)
            assert err.value.code == 503 and b"stalled" in err.value.read()
    finally:
        server.stop()
        agent.close()
