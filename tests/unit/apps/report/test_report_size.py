"""A month of intervals makes a page about as small as a day's: plots are cut to the screen."""

from __future__ import annotations

from acceptmon.apps.report.plots import plots_for
from tests.unit.apps.report.test_downsample import _series

#: Bytes of all of a source's PNGs, light and dark: a few screens' worth, never the log's.
PLOTS_BYTES = 150_000


def _png_bytes(n: int) -> int:
    return sum(len(png) for plot in plots_for(_series(n), [], []) for png in plot.png.values())


def test_the_plots_stay_small_however_many_intervals() -> None:
    day, month = _png_bytes(5_000), _png_bytes(300_000)
    assert day < PLOTS_BYTES and month < PLOTS_BYTES, (day, month)
