"""Container logs (CRI, Docker json-file) read like the plain log they wrap: offline, live, resumed."""

from __future__ import annotations

import io
import json
import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from acceptmon.cli import main
from acceptmon.clock import ManualClock
from acceptmon.ingest import PerRecord, Pipeline
from acceptmon.ingest.build import build_pipeline
from acceptmon.model import CONTAINER_MALFORMED, Chunk, Record, ServerStart, SpecSample
from acceptmon.sources.local import LocalSource
from acceptmon.sources.stdin import StreamSource
from acceptmon.testing import synth
from acceptmon.testing.container import cri_lines, json_file_lines, rfc3339

T0 = datetime(2026, 11, 30, 12, 0, 1, tzinfo=UTC)
LLAMA = Path(__file__).parents[2] / "data" / "llamacpp" / "restart-drop.log"
#: SGLang 0.5.23's long ``server_args``: its CUDA graph batch sizes make it ~18 KB.
LONG = {"cuda_graph_bs": list(range(1, 3100))}


def incident() -> list[str]:
    """Two runs, each opened by an ~18 KB ``server_args``; acceptance falls after the change."""
    rng = random.Random(7)
    t1 = T0 + timedelta(hours=1)
    lines = synth.startup(T0, 1, **LONG) + list(synth.traffic(rng, T0 + timedelta(minutes=1), 120, 3.2))
    lines += synth.shutdown(t1 - timedelta(minutes=1))
    lines += synth.startup(t1, 2, speculative_draft_model_path="/models/other-draft", **LONG)
    lines += list(synth.traffic(rng, t1 + timedelta(minutes=1), 120, 2.1))
    assert max(len(s.encode()) for s in lines) > 16 * 1024
    return lines


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(list(args))
    return code, capsys.readouterr().out


@pytest.fixture
def logs(tmp_path: Path) -> dict[str, Path]:
    plain = incident()
    return {
        "plain": write(tmp_path / "plain.log", plain),
        "cri": write(tmp_path / "0.log", cri_lines(plain, T0)),
        "json-file": write(tmp_path / "c-json.log", json_file_lines(plain, T0)),
    }


def test_cri_and_json_file_give_the_plain_run_table_and_metrics(
    capsys: pytest.CaptureFixture[str], logs: dict[str, Path]
) -> None:
    args = ("--timezone", "UTC", "--draft-config", "/nonexistent")
    out = {}
    for kind, path in logs.items():
        code, prom = cli(capsys, "oneshot", "--name", "svc", *args[:2], str(path))
        assert code == 0
        code, runs = cli(capsys, "runs", "--format", "json", *args[:2], str(path))
        assert code in (0, 3)
        out[kind] = (prom, json.loads(runs), code)
    plain_prom = out["plain"][0]
    assert 'acceptmon_server_starts_total{engine="sglang",source="svc"} 2.0' in plain_prom
    for kind in ("cri", "json-file"):
        prom, runs, code = out[kind]
        errors = [s for s in prom.splitlines() if s.startswith("acceptmon_parse_errors_total{")]
        assert errors and all(s.endswith(" 0.0") for s in errors), errors
        # Everything but the raw line count (a split line is two raw lines) is the plain file's.
        strip = [s for s in prom.splitlines() if not s.startswith("acceptmon_lines_total")]
        assert strip == [s for s in plain_prom.splitlines() if not s.startswith("acceptmon_lines_total")]
        assert _without_paths(runs) == _without_paths(out["plain"][1]) and code == out["plain"][2]


def _without_paths(doc: object) -> object:
    """The run table minus where each run was read from (the file names differ)."""
    if isinstance(doc, dict):
        return {k: _without_paths(v) for k, v in doc.items() if k not in ("source", "path", "lineno", "line")}
    if isinstance(doc, list):
        return [_without_paths(v) for v in doc]
    return doc


def _feed_live(src: LocalSource, pipeline: Pipeline, stop_after: int | None = None) -> int:
    """Poll, feed and commit until nothing more comes (or ``stop_after`` chunks); chunks fed."""
    fed = 0
    while chunks := src.poll():
        for chunk in chunks:
            pipeline.feed(chunk)
            src.commit(chunk)
            fed += 1
            if stop_after is not None and fed >= stop_after:
                return fed
    return fed


@pytest.mark.parametrize("wrap", [cri_lines, json_file_lines])
def test_live_source_resumed_inside_a_split_line_counts_exactly(
    tmp_path: Path, wrap: Callable[[list[str], datetime], list[str]]
) -> None:
    plain = incident()
    wrapped = wrap(plain, T0)
    # Up to the first piece of the second start's server_args: its last piece is not written yet.
    cut = [i for i, s in enumerate(wrapped) if "speculative_draft_model_path" in s][1]
    assert " stdout P " in wrapped[cut][:40] or '\\n"' not in wrapped[cut]  # a first piece
    path = write(tmp_path / "0.log", wrapped[: cut + 1])
    pipeline = build_pipeline(UTC)
    src = LocalSource("svc", str(path), clock=ManualClock(), read_size=4096, poll_bytes=1 << 20)
    _feed_live(src, pipeline)
    assert pipeline.store.stats("svc").counters["server_starts"] == 1  # the split one is held back
    state = src.checkpoint()
    src.close()
    with path.open("a") as f:
        f.write("\n".join(wrapped[cut + 1 :]) + "\n")
    again = LocalSource("svc", str(path), clock=ManualClock(), read_size=4096, poll_bytes=1 << 20)
    again.restore(state)
    _feed_live(again, pipeline)
    again.close()
    reference = build_pipeline(UTC)
    whole = LocalSource("svc", str(write(tmp_path / "plain.log", plain)), clock=ManualClock())
    _feed_live(whole, reference)
    whole.close()
    got, want = pipeline.store.stats("svc"), reference.store.stats("svc")
    assert got.error_kinds == want.error_kinds and sum(got.error_kinds.values()) == 0
    for name in ("server_starts", "decode_batches", "prefill_batches"):
        assert got.counters[name] == want.counters[name], name
    assert got.counters["server_starts"] == 2
    runs = pipeline.tracker.runs("svc")
    assert [r.spec.draft_model_path for r in runs] == [
        r.spec.draft_model_path for r in reference.tracker.runs("svc")
    ]


def test_llamacpp_without_times_inside_cri_gets_the_runtime_times(tmp_path: Path) -> None:
    plain = LLAMA.read_text().splitlines()[:40]
    stamps = [T0 + timedelta(seconds=i) for i in range(len(plain))]
    wrapped = [f"{rfc3339(t)} stderr F {line}" for t, line in zip(stamps, plain, strict=True)]
    path = write(tmp_path / "0.log", wrapped)
    pipeline = build_pipeline(UTC)
    records: list[Record] = []
    pipeline.consumers.append(PerRecord(records.append))
    src = LocalSource("llama", str(path), clock=ManualClock())
    _feed_live(src, pipeline)
    src.close()
    spec = [(r.meta.lineno, r.meta.ts) for r in records if isinstance(r, SpecSample)]
    assert len(spec) >= 3
    assert all(ts == stamps[lineno - 1] for lineno, ts in spec), spec
    starts = [r.meta.ts for r in records if isinstance(r, ServerStart)]
    assert starts and all(ts is not None and ts.year == T0.year for ts in starts)


def test_stdin_detects_and_unwraps_and_counts_bad_records() -> None:
    plain = incident()
    data = ("\n".join(json_file_lines(plain, T0)) + "\nnot a record\n").encode()
    source = StreamSource("pipe", io.BytesIO(data), read_size=4096, poll_bytes=1 << 16, wait=True)
    lines: list[str] = []
    errors: list[tuple[str, int]] = []
    while not source.ended:
        for chunk in source.poll():
            lines += chunk.lines
            errors += chunk.errors
            assert chunk.times is not None and len(chunk.times) == len(chunk.lines)
    assert lines == plain and errors == [(CONTAINER_MALFORMED, 1)]


def test_container_errors_are_counted_and_logged_once_per_kind(caplog: pytest.LogCaptureFixture) -> None:
    pipeline = build_pipeline(UTC)
    errors = ((CONTAINER_MALFORMED, 2),)
    with caplog.at_level("WARNING"):
        pipeline.feed(Chunk("svc", (), 1, None, "", (), errors))
        pipeline.feed(Chunk("svc", ("x",), 5, None, "", (None,), errors))
    stats = pipeline.store.stats("svc")
    assert stats.error_kinds[CONTAINER_MALFORMED] == 4 and stats.counters["lines"] == 5
    logged = [r.getMessage() for r in caplog.records if CONTAINER_MALFORMED in r.getMessage()]
    assert len(logged) == 1 and "svc" in logged[0]
