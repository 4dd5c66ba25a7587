"""The report's plots say what the log says (issue 25 item 9): no batch-size plot where none is
logged, per-position bars before/after a change counted from 0 on whole ticks, one colour per
run and legends off the data, readable run-start labels with the full keys, bright dark-mode points."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from acceptmon.apps.report import plots
from acceptmon.apps.report.series import SeriesSink, SourceSeries
from acceptmon.detect.runstats import RunStats
from acceptmon.ingest.read import new_pipeline, opened, read_logs
from acceptmon.testing import changes, synth

DEMO = Path(plots.__file__).resolve().parents[1] / "demo" / "data"
T0 = datetime(2026, 11, 30, 9, 0, 0)


def _read(log: Path, draft_config: list[str] | None = None) -> tuple[SourceSeries, list[RunStats]]:
    with opened([str(log)]) as (logs, readers):
        pipeline, table = new_pipeline(UTC, draft_config, readers)
        sink = SeriesSink(pipeline.tracker)
        pipeline.consumers.append(sink)
        assert read_logs(pipeline, logs) == []
    return sink.sources[str(log)], table.of(str(log))


def _vllm(tmp_path: Path) -> Path:
    rng = random.Random(7)
    t1 = T0 + timedelta(hours=1)
    lines = [changes.non_default_args_line(T0), *changes.vllm_traffic(rng, T0, 60, [0.82, 0.64, 0.47])]
    lines += [changes.non_default_args_line(t1, model="other/model")]
    lines += changes.vllm_traffic(rng, t1, 60, [0.45, 0.30, 0.18])
    (path := tmp_path / "vllm.log").write_text("\n".join(lines) + "\n")
    return path


def _twelve(tmp_path: Path) -> Path:
    lines = []
    for i in range(12):
        start = T0 + timedelta(hours=2 * i)
        lines += synth.startup(start, seed=i, speculative_num_steps=3 + i % 3)
        lines += synth.traffic(random.Random(i), start + timedelta(seconds=50), 40, 2.0 + 0.05 * i)
    (path := tmp_path / "twelve.log").write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def axes() -> Iterator[Callable[[Callable[[Any, str], None], str], Any]]:
    """Draw a plot's ``draw`` in a theme; the axes, laid out as the report lays them out."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figs: list[Any] = []

    def draw(fn: Callable[[Any, str], None], theme: str) -> Any:
        with plt.style.context(plots.THEMES[theme]):
            fig, ax = plt.subplots(figsize=plots.OVER_TIME, dpi=plots.DPI)
            figs.append(fig)
            fn(ax, theme)
            fig.tight_layout()
            fig.canvas.draw()
            return ax

    yield draw
    for fig in figs:
        plt.close(fig)


def test_vllm_has_no_batch_size_plot_and_positions_before_after(tmp_path: Path, axes: Any) -> None:
    s, runs = _read(_vllm(tmp_path))
    names = [p.name for p in plots.plots_for(s, runs, [])]
    assert names == ["over-time", "per-run", "positions"]
    shown = plots.position_runs(s, runs)
    assert [rid for rid, _ in shown] == ["r1", "r2"]
    assert shown[0][1][0] == pytest.approx(0.82, abs=0.02) and shown[1][1][0] == pytest.approx(0.45, abs=0.02)
    ax = axes(plots.positions(shown), "light")
    assert list(ax.get_xticks()) == [0, 1, 2]  # 0-based, as "fell at positions 0, 1" counts
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["r1 (before)", "r2 (after)"]


def test_sglang_keeps_its_batch_size_plot(tmp_path: Path) -> None:
    s, runs = _read(_twelve(tmp_path))
    assert "against-load" in [p.name for p in plots.plots_for(s, runs, [])]


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_runs_have_distinct_colours_and_legends_leave_the_data(tmp_path: Path, axes: Any, theme: str) -> None:
    s, runs = _read(_twelve(tmp_path))
    ax = axes(plots.against_load(s), theme)
    medians = [line for line in ax.get_lines() if line.get_label().endswith("median")]
    assert len(medians) == plots.LOAD_RUNS
    assert len({line.get_color() for line in medians}) == len(medians)
    legend, box = ax.get_legend().get_window_extent(), ax.get_window_extent()
    assert legend.x0 >= box.x1
    over = axes(plots.over_time(s, runs, []), theme)
    assert over.get_legend().get_window_extent().y1 <= over.get_window_extent().y0


@pytest.fixture
def demo(tmp_path: Path) -> tuple[SourceSeries, list[RunStats]]:
    saved = []
    for i, snap in enumerate(json.loads((DEMO / "demo-draft-configs.json").read_text())["snapshots"]):
        (path := tmp_path / f"s{i}.json").write_text(json.dumps(snap))
        saved.append(str(path))
    return _read(DEMO / "demo-eagle3-incident.log", saved)


def test_run_start_labels_are_readable_with_the_full_key(demo: Any, axes: Any) -> None:
    ax = axes(plots.over_time(*demo, []), "dark")
    labels = [t for t in ax.texts if t.get_text().startswith("r")]
    assert len(labels) == 3
    assert all(t.get_rotation() == 0 and t.get_fontsize() >= 8 for t in labels)
    assert "draft.eagle_config.eagle_aux_hidden_state_layer_ids" in labels[1].get_text()
    assert all(t.get_color() == plots.TEXT["dark"] for t in labels)


def _luminance(colour: str) -> float:
    from matplotlib.colors import to_rgb

    r, g, b = to_rgb(colour)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def test_dark_mode_points_stand_out(demo: Any, axes: Any) -> None:
    ax = axes(plots.over_time(*demo, []), "dark")
    dots = [line for line in ax.get_lines() if line.get_marker() == "."]
    assert dots and all(_luminance(d.get_color()) > 0.5 and (d.get_alpha() or 1) >= 0.7 for d in dots)
