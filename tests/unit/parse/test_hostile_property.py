"""Generated hostile records through the whole agent: it keeps serving, nothing raises.

Lines come from the format-exact builders in acceptmon.testing.synth with one field
replaced by a hostile value (huge or non-finite numbers, odd literals), fed
to ``Agent.step()`` from a real file; then everything the agent serves is
rendered and the checkpoint written.
"""

from __future__ import annotations

import math
import re
import tempfile
from datetime import datetime
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acceptmon.apps.agent.agent import Agent
from acceptmon.settings import load
from acceptmon.testing.synth import decode_line, prefill_line, server_args_line
from tests.unit.parse.test_hostile import SGL, VLLM, serve_all

T0 = datetime(2026, 1, 1)

HOSTILE = st.one_of(
    st.sampled_from(
        [
            "inf",
            "-inf",
            "nan",
            "1e400",
            "-1e400",
            "1j",
            "...",
            "0x" + "f" * 4000,
            "9" * 4400,
            "-" + "9" * 4400,
        ]
    ),
    st.sampled_from(["1" * 19, "0." + "9" * 30, "1.5e308", "NaN", "Infinity", "(", "[[[[", "'", "{1: 2}"]),
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.text(alphabet=" ,:[]()=.'\"0123456789eE+-xj\\", max_size=40),
)

_NUMBER = re.compile(r"(?<=: )[0-9.]+|(?<==)[0-9.]+|(?<=steps )\d+|(?<=-> )\d+")


def _templates() -> list[str]:
    return [
        decode_line(T0, 2.0),
        prefill_line(T0, 512, 3),
        server_args_line(T0).replace("'Qwen/Qwen3-32B'", "VALUE", 1),
        server_args_line(T0).replace("40", "VALUE", 1),
        f"{SGL}Adaptive spec params updated: steps 3 -> 2 (ema_accept_len=2.10)",
        f"{VLLM}SpecDecoding metrics: Draft acceptance rate: 50.0%, Mean acceptance length: 2.50, "
        "Accepted: 30 tokens, Drafted: 60 tokens, Per-position acceptance rate: 0.600, 0.400",
        f"{VLLM}Speculative metrics: Draft acceptance rate: 0.500, System efficiency: 0.600, "
        "Number of speculative tokens: 3, Number of accepted tokens: 30, Number of draft tokens: 60, "
        "Number of emitted tokens: 50.",
    ]


TEMPLATES = _templates()


@st.composite
def hostile_line(draw: st.DrawFn) -> str:
    line = draw(st.sampled_from(TEMPLATES))
    if "VALUE" in line:
        return line.replace("VALUE", draw(HOSTILE))
    spots = list(_NUMBER.finditer(line))
    m = spots[draw(st.integers(0, len(spots) - 1))]
    return line[: m.start()] + draw(HOSTILE) + line[m.end() :]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(hostile_line(), min_size=1, max_size=6))
def test_agent_survives_hostile_records(lines: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "a.log"
        good = [server_args_line(T0), *lines, decode_line(T0, 2.0)]
        log.write_text("\n".join(good) + "\n")
        agent = Agent(load(None, [str(log)], {"state_dir": str(Path(tmp) / "state")}))
        agent.open()
        agent.step()
        agent.step()
        metrics = serve_all(agent)
        agent.close()
        lines_total = next(x for x in metrics.splitlines() if x.startswith("acceptmon_lines_total{"))
        assert lines_total.endswith(f" {float(len(good))}")
        assert "acceptmon_parse_errors_total" in metrics
        for sample in metrics.splitlines():
            name = sample.split("{", 1)[0]
            if name.endswith(("_total", "_sum", "_count", "_bucket")):
                assert math.isfinite(float(sample.rsplit(" ", 1)[1])), sample
