"""The README's notebook example runs, and gives what it says."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[4]


def test_the_readme_notebook_block_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## In a notebook", 1)[1]
    block = re.search(r"```python\n(.*?)```", section, re.S)
    assert block is not None
    monkeypatch.chdir(ROOT)
    scope: dict[str, Any] = {}
    exec(compile(block.group(1), "README.md", "exec"), scope)
    df, runs = scope["df"], scope["runs"]
    assert len(df) == 270 and df["ts"].dt.tz is not None  # zone-aware
    medians = df.groupby("run_id", observed=True).accept_len.median().round(2).to_dict()
    assert medians == {"r1": 2.40, "r2": 1.57, "r3": 2.42}
    assert list(runs["run_id"]) == ["r1", "r2", "r3"] and list(runs["intervals"]) == [90, 90, 90]
    assert {"accept_len_ci_low", "accept_len_ci_high", "num_steps", "changed_keys"} <= set(runs.columns)


def test_the_agent_does_not_import_pandas() -> None:
    import subprocess
    import sys

    code = "import sys, acceptmon.apps.agent.daemon, acceptmon.cli; print('pandas' in sys.modules, 'matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
