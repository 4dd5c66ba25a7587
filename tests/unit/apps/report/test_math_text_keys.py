"""``acceptmon report`` draws log-derived text as written: ``$…$`` in a key name is not math."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from acceptmon import children
from acceptmon.cli import main
from acceptmon.testing import synth


def _log(path: Path, key: str) -> str:
    """Two runs: the second opened by a new server_args key named ``key``."""
    rng, ts = random.Random(1), datetime(2026, 10, 1)
    lines = synth.startup(ts, 1) + list(synth.traffic(rng, ts + timedelta(seconds=50), 60, 2.5))
    ts += timedelta(minutes=10)
    lines += synth.startup(ts, 1, **{key: 1}) + list(synth.traffic(rng, ts + timedelta(seconds=50), 60, 2.5))
    path.write_text("\n".join(lines) + "\n")
    return str(path)


@pytest.fixture
def drawn_texts(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every text artist of every figure the report saves."""
    from matplotlib.figure import Figure
    from matplotlib.text import Text

    texts: list[str] = []
    save = Figure.savefig

    def recording(fig: Figure, *args: Any, **kwargs: Any) -> None:
        texts.extend(t.get_text() for t in fig.findobj(Text))
        save(fig, *args, **kwargs)

    # Every figure is drawn here, where this spy sees it (not beside, in a forked child).
    monkeypatch.setattr(children, "forkable", lambda: False)
    monkeypatch.setattr(Figure, "savefig", recording)
    yield texts


@pytest.mark.parametrize(
    "key",
    [r"$\frac{a}{b}$", r"$\frac{a}{$", r"x_$\undefinedcommand$", "a$b$c$", "$"],
    ids=["math", "unbalanced-braces", "unknown-command", "odd-dollars", "lone-dollar"],
)
def test_a_dollar_key_is_drawn_literally(
    key: str, tmp_path: Path, drawn_texts: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    from matplotlib import cbook

    out = tmp_path / "r.html"
    assert main(["report", "--timezone", "UTC", _log(tmp_path / "s.log", key), "-o", str(out)]) == 0
    assert "internal error" not in capsys.readouterr().err
    labels = [t for t in drawn_texts if t.startswith("r2 ") and "args." in t]  # run id, time, full key
    assert labels, drawn_texts
    assert not [t for t in drawn_texts if cbook.is_math_text(t)], "log text typeset as math"
    assert key in out.read_text()  # the run table shows the key as it is
