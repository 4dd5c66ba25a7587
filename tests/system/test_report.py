"""``acceptmon report`` rendered in headless Chromium: a page with plots, in light and dark."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.tools import require_tool

pytestmark = pytest.mark.system

DEMO = Path(__file__).resolve().parents[2] / "acceptmon" / "apps" / "demo" / "data"
#: The rolling median's colour (matplotlib's tab:orange, opaque): present only if the plots rendered.
ORANGE = (0xFF, 0x7F, 0x0E)


def _near(px: tuple[int, ...], colour: tuple[int, int, int]) -> bool:
    return all(abs(a - b) < 24 for a, b in zip(px[:3], colour, strict=True))


def _screenshot(chromium: str, page: Path, out: Path, dark: bool) -> None:
    scheme = (
        ["--blink-settings=preferredColorScheme=0"] if dark else ["--blink-settings=preferredColorScheme=1"]
    )
    cmd = [
        chromium,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        *scheme,
        f"--screenshot={out}",
        "--window-size=1200,1600",
        page.as_uri(),
    ]
    subprocess.run(cmd, capture_output=True, timeout=120, check=True)


def test_report_renders_with_plots_in_light_and_dark(tmp_path: Path) -> None:
    from PIL import Image

    chromium = require_tool("chromium")
    args = []
    for i, snap in enumerate(json.loads((DEMO / "demo-draft-configs.json").read_text())["snapshots"]):
        (tmp_path / f"s{i}.json").write_text(json.dumps(snap))
        args += ["--draft-config", str(tmp_path / f"s{i}.json")]
    page, pngs = tmp_path / "report.html", tmp_path / "png"
    cmd = [
        sys.executable,
        "-m",
        "acceptmon",
        "report",
        str(DEMO / "demo-eagle3-incident.log"),
        *args,
        "-o",
        str(page),
        "--png",
        str(pngs),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    text = page.read_text()
    assert text.count("data:image/png;base64,") == 6  # three plots, light and dark
    assert "eagle_aux_hidden_state_layer_ids" in text and "verdict: r3 vs r2: BETTER" in text
    assert sorted(p.name for p in pngs.iterdir()) == [
        "01-against-load.png",
        "01-over-time.png",
        "01-per-run.png",
    ]
    for dark in (False, True):
        shot = tmp_path / f"shot-{'dark' if dark else 'light'}.png"
        _screenshot(chromium, page, shot, dark)
        img = Image.open(shot).convert("RGB")
        raw = img.tobytes()
        pixels = [tuple(raw[i : i + 3]) for i in range(0, len(raw), 3)]
        assert len(set(pixels)) > 200, "the screenshot is blank"
        assert sum(_near(p, ORANGE) for p in pixels) > 500, "no rolling-median line: the plots did not render"
        corner = img.getpixel((5, 5))
        assert (sum(corner) < 150) == dark, f"background {corner} in {'dark' if dark else 'light'} mode"
