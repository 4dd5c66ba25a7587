"""Tables of SGLang lines → records, including damaged and hostile ones."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from acceptmon.model import (
    Crash,
    DecodeSample,
    ParseError,
    PrefillSample,
    ServerReady,
    ServerStart,
    Shutdown,
    SpecParamsUpdate,
)
from acceptmon.parse.line import LineParser

BODY = (
    "#running-req: 12, #token: 20480, token usage: 0.10, accept len: 2.87, accept rate: 0.62, "
    "cuda graph: True, gen throughput (token/s): 512.34, #queue-req: 0"
)


def parse(text: str):
    return LineParser("s").parse(text, 1)


@pytest.mark.parametrize(
    ("line", "ts", "ranks"),
    [
        (f"[2026-11-30 12:00:01 TP0] Decode batch, {BODY}", datetime(2026, 11, 30, 12, 0, 1), {"tp": 0}),
        (f"[2026-11-30 12:00:01] Decode batch, {BODY}", datetime(2026, 11, 30, 12, 0, 1), {}),
        (
            f"[2026-11-30 12:00:01.042 DP1 TP2 EP2] Decode batch, {BODY}",
            datetime(2026, 11, 30, 12, 0, 1, 42000),
            {"dp": 1, "tp": 2, "ep": 2},
        ),
        (
            f"[2026-11-30 12:00:01 DP12 PP1 ATTN_CP1 MOE_DP3 TP15 EP15] Decode batch, {BODY}",
            datetime(2026, 11, 30, 12, 0, 1),
            {"dp": 12, "pp": 1, "attn_cp": 1, "moe_dp": 3, "tp": 15, "ep": 15},
        ),
        (
            f"[2026-11-30 12:00:01 DP-1 TP0] Decode batch. {BODY}",
            datetime(2026, 11, 30, 12, 0, 1),
            {"dp": -1, "tp": 0},
        ),
        (f"[12:00:01 TP3] Decode batch. {BODY}", None, {"tp": 3}),
        (f"[DP0 TP0 EP0] Decode batch, {BODY}", None, {"dp": 0, "tp": 0, "ep": 0}),
        (f"[gpu_id=3] Decode batch. {BODY}", None, {"gpu": 3}),
        (f"[gpu=1] Decode batch. {BODY}", None, {"gpu": 1}),
        (
            f"\x1b[36m(SchedulerActor pid=3413, ip=10.0.0.12)\x1b[0m [2026-11-30 12:00:01 DP1 TP2] Decode batch, {BODY}",
            datetime(2026, 11, 30, 12, 0, 1),
            {"dp": 1, "tp": 2},
        ),
        (
            f"(MyActor(index=1) pid=9) (SchedulerActor pid=3) [2026-11-30 12:00:01 TP1] Decode batch, {BODY}",
            datetime(2026, 11, 30, 12, 0, 1),
            {"tp": 1},
        ),
        (
            f"sglang-1  | [2026-11-30 12:00:01 TP0] Decode batch, {BODY}",
            datetime(2026, 11, 30, 12, 0, 1),
            {"tp": 0},
        ),
        (
            f"2026-11-30 12:00:01.123 INFO 4242 [ TP0 scheduler.py:1234] Decode batch, {BODY}",
            datetime(2026, 11, 30, 12, 0, 1, 123000),
            {"tp": 0},
        ),
        (f"   [2026-11-30 12:00:01 TP0] Decode batch, {BODY}", datetime(2026, 11, 30, 12, 0, 1), {"tp": 0}),
        (
            f"Loading shards: 50%\r[2026-11-30 12:00:01 TP0] Decode batch, {BODY}\r",
            datetime(2026, 11, 30, 12, 0, 1),
            {"tp": 0},
        ),
    ],
)
def test_prefix_styles(line: str, ts: datetime | None, ranks: dict[str, int]) -> None:
    rec = parse(line)
    assert isinstance(rec, DecodeSample)
    assert rec.meta.ts == (ts.replace(tzinfo=UTC) if ts else None)  # wall time in the zone (UTC here)
    assert dict(rec.meta.ranks) == ranks
    assert (rec.accept_len, rec.accept_rate_printed, rec.running_req, rec.queue_req) == (2.87, 0.62, 12, 0)


@pytest.mark.parametrize(
    ("body", "iteration"),
    [
        (f"Decode batch. {BODY}", None),
        (f"Decode batch [4031], {BODY}, ", 4031),
        (f"Decode batch, {BODY}, ", None),
        (f"Decode batch, {BODY}", None),
        (f"Decode batch [7], {BODY}", 7),
    ],
)
def test_header_spellings_and_trailing_comma(body: str, iteration: int | None) -> None:
    rec = parse(f"[2026-11-30 12:00:01 TP0] {body}")
    assert isinstance(rec, DecodeSample)
    assert rec.iteration == iteration
    assert rec.gen_throughput == 512.34
    assert rec.graph is True


def test_fields_in_any_order_and_unknown_fields_kept() -> None:
    line = (
        "[2026-11-30 12:00:01] Decode batch, #queue-req: 3, brand new field: 7, accept len: 1.90, "
        "gen throughput (token/s): 10.00, #running-req: 2, npu graph: False, fwd occupancy: 93.10%, "
        "timestamp: 2026-11-30T12:00:01.123456"
    )
    rec = parse(line)
    assert isinstance(rec, DecodeSample)
    assert (rec.queue_req, rec.running_req, rec.accept_len, rec.graph) == (3, 2, 1.9, False)
    extra = dict(rec.extra)
    assert extra["brand new field"] == 7
    assert extra["fwd occupancy"] == 93.1
    assert extra["timestamp"] == "2026-11-30T12:00:01.123456"


def test_hybrid_pool_forms() -> None:
    old = parse(
        "[2026-11-30 12:00:01] Decode batch, #running-req: 4, #token: full=100, swa=50, "
        "token usage: full=0.10, swa=0.20, accept len: 2.00, gen throughput (token/s): 1.00, #queue-req: 0"
    )
    assert isinstance(old, DecodeSample)
    assert old.token_usage == 0.10
    assert dict(old.extra)["#token"] == "full=100, swa=50"
    new = parse(
        "[2026-11-30 12:00:01] Decode batch, #running-req: 4, #full token: 100, full token usage: 0.30, "
        "#swa token: 5, swa token usage: 0.01, mamba num: 3, mamba usage: 0.02, accept len: 2.00, "
        "gen throughput (token/s): 1.00, #queue-req: 0"
    )
    assert isinstance(new, DecodeSample)
    assert new.token_usage == 0.30
    assert dict(new.extra)["mamba num"] == 3


def test_ray_repeated_suffix_is_stripped_and_counted() -> None:
    rec = parse(
        f"\x1b[36m(SchedulerActor pid=1)\x1b[0m [2026-11-30 12:00:01 DP0 TP0] Decode batch, {BODY}"
        "\x1b[32m [repeated 14x across cluster] (Ray deduplicates logs by default.)\x1b[0m"
    )
    assert isinstance(rec, DecodeSample)
    assert rec.repeated == 14
    assert rec.queue_req == 0


@pytest.mark.parametrize(
    "line",
    [
        "[2026-11-30 12:00:01 TP0] Decode batch, #running-req: 12, #token: 20480, token usage: 0.10, accept len: 2.8",
        "[2026-11-30 12:00:01 TP0] Decode batch, #running-req: 12, #token: 20480, token usage: 0.10, accept len: 2.87",
        "[2026-11-30 12:00:01 TP0] Decode batch, #running-req: 12, #token: 20ccept rate: 0.62, cuda graph: True, gen throughput (token/s): 512.34, #queue-req: 0",
        "[2026-11-30 12:00:01 TP0] Decode batch, #running-req: 12, accept len: 2.gen throughput (token/s): 512.34, #queue-req: 0",
        "[2026-11-30 12:00:01 TP0] Decode batch, #running-req: 12, accept len: 2.87, gen throughput (token/s): 512.34, #queue-req: 1[2026-11-30 12:00:02 TP0] Prefill batch, #new-seq: 1",
        "[2026-11-30 12:00:01 TP0] Decode batch, #running-req: 1x, gen throughput (token/s): 5.00, #queue-req: 0",
        "[2026-11-30 12:00:01 TP0] Decode batch, #running-req: 1, #running-req: 2, gen throughput (token/s): 5.00, #queue-req: 0",
        "[2026-11-30 12:00:01 TP0] Decode batch, #running-req: 1, accept len: 999.00, gen throughput (token/s): 5.00, #queue-req: 0",
        "[2026-11-30 12:00:01 TP0] Decode batch",
        "[2026-11-30 12:00:01 TP0] Decode batchXYZ",
        "Decode batch, \x00\x01\x02\ufffd\ufffd",
        "[2026-11-30 12:00:01 TP0] Decode batch, accept len: ２.５０, #running-req: 1, gen throughput (token/s): 5.00, #queue-req: 0",
    ],
)
def test_damaged_decode_lines_are_errors_not_values(line: str) -> None:
    rec = parse(line)
    assert isinstance(rec, ParseError)


def test_glued_lines_keep_the_complete_second_record() -> None:
    rec = parse(
        f"[2026-11-30 12:00:00 TP0] Decode batch, #running-req: 3, acce[2026-11-30 12:00:01 TP0] Decode batch, {BODY}"
    )
    assert isinstance(rec, DecodeSample)
    assert rec.accept_len == 2.87
    assert rec.meta.ts == datetime(2026, 11, 30, 12, 0, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    "line",
    [
        "",
        "\x00" * 1000,
        "\ufffd\ufffd\ufffd not utf8",
        "x" * 1_000_000,
        '[2026-11-30 12:00:01] INFO:     127.0.0.1:5000 - "POST /generate HTTP/1.1" 200 OK',
        "Loading safetensors checkpoint shards:  50% Completed | 1/2 [00:01<00:01]",
        "NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>",
        "Traceback (most recent call last):",
    ],
)
def test_noise_is_ignored(line: str) -> None:
    assert parse(line) is None


def test_million_char_decode_line_is_an_error_not_a_crash() -> None:
    rec = parse("[2026-11-30 12:00:01 TP0] Decode batch, " + "x: 1, " * 200_000)
    assert isinstance(rec, ParseError)


def test_prefill_variants() -> None:
    new = parse(
        "[2026-11-30 12:00:50 TP0] Prefill batch, #new-seq: 1, #new-token: 1024, #cached-token: 0, "
        "token usage: 0.05, #running-req: 8, #queue-req: 0, #pending-token: 0, cuda graph: False, "
        "input throughput (token/s): 4056.73"
    )
    assert isinstance(new, PrefillSample)
    assert (new.new_seq, new.new_token, new.running_req) == (1, 1024, 8)
    mixed = parse(
        "[12:00:50 TP0] Prefill batch(mixed #running-req: 5). #new-seq: 2, #new-token: 10, "
        "#cached-token: 0, cache hit rate: 0.00%, #queue-req: 0"
    )
    assert isinstance(mixed, PrefillSample)
    assert mixed.running_req == 5
    assert dict(mixed.extra)["cache hit rate"] == 0.0


def test_server_args_both_forms() -> None:
    dataclass_form = parse(
        "[2026-11-30 12:00:00] server_args=ServerArgs(model_path='m', speculative_algorithm='EAGLE3', "
        "speculative_num_steps=3, cuda_graph_bs=[1, 2, 4], json_model_override_args='{}', "
        "load_format=<LoadFormat.AUTO: 'auto'>, random_seed=42, lora_paths=None, extra={'a': -1.5})"
    )
    assert isinstance(dataclass_form, ServerStart)
    args = dataclass_form.args
    assert args["speculative_num_steps"] == 3
    assert args["cuda_graph_bs"] == [1, 2, 4]
    assert args["load_format"] == "<LoadFormat.AUTO: 'auto'>"
    assert args["extra"] == {"a": -1.5}
    assert args["lora_paths"] is None
    dict_form = parse(
        "[2026-11-30 12:00:00] server_args={'model_path': 'm', 'tp_size': 2, 'watermark': '<redacted>'}"
    )
    assert isinstance(dict_form, ServerStart)
    assert dict_form.args == {"model_path": "m", "tp_size": 2, "watermark": "<redacted>"}


def test_huge_and_hostile_server_args() -> None:
    big = "[2026-11-30 12:00:00] server_args={" + ", ".join(f"'k{i}': {i}" for i in range(3000)) + "}"
    assert len(big) > 20_000
    rec = parse(big)
    assert isinstance(rec, ServerStart)
    assert rec.args["k2999"] == 2999
    for hostile in (
        "[2026-11-30 12:00:00] server_args=" + "[" * 100_000,
        "[2026-11-30 12:00:00] server_args=__import__('os').system('echo pwned')",
        "[2026-11-30 12:00:00] server_args=ServerArgs(model_path='m', tp_size=",
    ):
        assert isinstance(parse(hostile), ParseError)


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        ("[2026-11-30 12:00:45] The server is fired up and ready to roll!", ServerReady),
        (
            "[2026-11-30 12:01:26] SIGTERM received. signum=None frame=None. Draining requests and shutting down...",
            Shutdown,
        ),
        ("[2026-11-30 12:01:26 TP0] Scheduler hit an exception: Traceback (most recent call last):", Crash),
        (
            "[2026-11-30 12:01:26] SIGQUIT received. signum=None, frame=None. It usually means one child failed.",
            Crash,
        ),
        (
            "[2026-11-30 12:01:26] Received sigquit from a child process. It usually means the child failed.",
            Crash,
        ),
        ("[2026-11-30 12:01:26] Watchdog timeout (self.watchdog_timeout=300)", Crash),
        (
            "[2026-11-30 12:01:26 TP0] Adaptive spec params updated: steps 3 -> 5 (ema_accept_len=3.41)",
            SpecParamsUpdate,
        ),
    ],
)
def test_lifecycle_lines(line: str, kind: type) -> None:
    assert isinstance(parse(line), kind)
