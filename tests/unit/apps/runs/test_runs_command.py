"""``acceptmon runs``: the per-run table and the verdict, on real files."""

from __future__ import annotations

import gzip
import json
import os
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from acceptmon.cli import main
from acceptmon.testing import synth

T0 = datetime(2026, 11, 30, 9, 0, 0)
DEMO = (
    Path(__file__).resolve().parents[4] / "acceptmon" / "apps" / "demo" / "data" / "demo-eagle3-incident.log"
)


def run_lines(start: datetime, level: float, seed: int, **args: object) -> list[str]:
    rng = random.Random(seed)
    return [
        *synth.startup(start, seed=seed, **args),
        *synth.traffic(rng, start + timedelta(seconds=50), 120, level),
    ]


def rotated_pair(tmp: Path, second_level: float) -> Path:
    """server.log.1.gz (an older run) and server.log (a restart with another num_steps)."""
    old = tmp / "server.log.1.gz"
    with gzip.open(old, "wt") as f:
        f.write("\n".join(run_lines(T0, 2.41, 1, speculative_num_steps=3)) + "\n")
    current = tmp / "server.log"
    current.write_text(
        "\n".join(run_lines(T0 + timedelta(hours=5), second_level, 2, speculative_num_steps=5)) + "\n"
    )
    os.utime(old, (1_000_000, 1_000_000))
    return tmp / "server.log*"


def test_demo_log_table_fits_80_columns_and_says_better(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["runs", str(DEMO)]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines() if line != str(DEMO)) <= 80
    assert "r1 " in out and "r3 " in out and "verdict: r3 vs r2: BETTER" in out


def test_rotated_pair_read_oldest_first_and_a_worse_restart_exits_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pattern = rotated_pair(tmp_path, 1.57)
    assert main(["runs", str(pattern)]) == 3
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines() if not line.startswith(str(tmp_path))) <= 80
    assert f"{tmp_path / 'server.log'}\n2 runs, 240 Decode intervals" in out
    assert "args.speculative_num_steps: 3 → 5" in out
    assert "verdict: r2 vs r1: WORSE" in out


def test_json_has_the_documented_keys(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pattern = rotated_pair(tmp_path, 2.41)
    assert main(["runs", "--format", "json", str(pattern)]) == 0
    (doc,) = json.loads(capsys.readouterr().out)["sources"]
    run = doc["runs"][1]
    for key in ("run_id", "started", "intervals", "accept_len_median", "accept_len_ci", "accept_rate"):
        assert run[key] is not None, key
    assert run["settings"]["num_steps"] == 5 and run["changed_keys"] == ["args.speculative_num_steps"]
    assert doc["verdict"]["state"] == "same" and doc["verdict"]["against_run_id"] == "r1"
    assert {"relative_change", "p_value"} <= doc["verdict"].keys()


def test_a_glob_over_two_logs_gives_two_tables(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a.log").write_text("\n".join(run_lines(T0, 2.4, 1)) + "\n")
    (tmp_path / "b.log").write_text("\n".join(run_lines(T0, 1.6, 2)) + "\n")
    assert main(["runs", str(tmp_path / "*.log")]) == 0
    out = capsys.readouterr().out
    assert f"{tmp_path / 'a.log'}\n1 run," in out and f"{tmp_path / 'b.log'}\n1 run," in out


def test_missing_source_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["runs", str(tmp_path / "nope.log")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_saved_draft_configs_name_the_changed_key_on_the_demo_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snapshots = json.loads((DEMO.parent / "demo-draft-configs.json").read_text())["snapshots"]
    args = []
    for i, snap in enumerate(snapshots):
        (tmp_path / f"start{i}.json").write_text(json.dumps(snap))
        args += ["--draft-config", str(tmp_path / f"start{i}.json")]
    assert main(["runs", *args, str(DEMO)]) == 0
    out = capsys.readouterr().out
    assert "draft.eagle_config.eagle_aux_hidden_state_layer_ids" in out
    assert "verdict: r3 vs r2: BETTER" in out and "not found" not in out


def test_run_stats_survive_a_checkpoint_round_trip(tmp_path: Path) -> None:
    from acceptmon.detect.runstats import RunTable
    from acceptmon.ingest.read import collect
    from acceptmon.sources.files import expand

    pattern = rotated_pair(tmp_path, 1.57)
    pipeline, table, _ = collect(expand(str(pattern)), UTC)
    source = str(tmp_path / "server.log")
    saved = json.loads(json.dumps(table.checkpoint()))
    again = RunTable(pipeline.tracker)
    again.restore(saved)
    assert [s.run.run_id for s in again.of(source)] == ["r1", "r2"]
    assert [s.median() for s in again.of(source)] == [s.median() for s in table.of(source)]
    assert again.verdict(source) == table.verdict(source)
    again.restore({"x": "nonsense", source: {"r9": {"strata": 1}}})  # ignored, never raises
