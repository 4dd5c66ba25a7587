"""Torture: the real agent, SIGKILLed at random, following a log real logrotate keeps rotating.

A writer process appends numbered Decode lines at 2,500 lines/s. Real
``logrotate -f`` rotates the log every 0.3-0.9 s, alternating ``create`` and
``copytruncate``, keeping every copy (``rotate 1000``, uncompressed). The
agent (``python -m acceptmon run``) is SIGKILLed at random moments (during
its startup, mid-ingest, or as logrotate starts) and restarted. At the end
every line in the log and its copies must have been counted exactly once:
the Decode counter, the accept-len histogram and the verify-round total
(which depend on each line's own values) must equal what the files hold.

Lines written between copytruncate's copy and its truncate end up in no
file, yet an agent that read them in that window rightly counted them. So
the test runs twice: with the writer paused (SIGSTOP) during each
copytruncate, where nothing is lost and every figure must be exact; and with
the writer running throughout, where each figure must lie between what the
files hold and that plus the lost lines (known by their ``#seq``).

Seed and scale: ACCEPTMON_TORTURE_SEED, _ROTATIONS (100), _KILLS (20).
"""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from acceptmon.testing import synth
from tests.support.agentproc import free_port
from tests.support.tools import require_tool
from tests.system.torture_writer import accept_len, running

pytestmark = pytest.mark.system

ROOT = Path(__file__).resolve().parents[2]
WRITER = Path(__file__).with_name("torture_writer.py")
SEED = int(os.environ.get("ACCEPTMON_TORTURE_SEED", "20261202"))
ROTATIONS = int(os.environ.get("ACCEPTMON_TORTURE_ROTATIONS", "100"))
KILLS = int(os.environ.get("ACCEPTMON_TORTURE_KILLS", "20"))
RATE = 2500
MODES = ("create", "copytruncate")
BOUNDS = ("1.05", "1.25", "1.5", "1.75", "2.0", "2.25", "2.5", "2.75", "3.0")
DECODE = re.compile(r"Decode batch, #running-req: (\d+), .*accept len: ([\d.]+), .*#queue-req: \d+")
SEQ = re.compile(r"#seq: (\d+)$")
ENGINE = re.compile(r'engine="sglang",?')

Procs = list["subprocess.Popen[bytes]"]
Decodes = list[tuple[float, int]]


@dataclass
class Census:
    """What the log and its rotated copies hold, read independently of the agent."""

    files: int = 0
    lines: int = 0
    decodes: Decodes = field(default_factory=list)
    seqs: list[int] = field(default_factory=list)
    #: Unterminated last lines: copytruncate copied half a write. The agent may
    #: or may not have counted them, so they only widen the expected range.
    tails: Decodes = field(default_factory=list)

    def add(self, text: str) -> None:
        self.lines += 1
        m = DECODE.search(text)
        if m is not None:
            self.decodes.append((float(m.group(2)), int(m.group(1))))
            seq = SEQ.search(text)
            if seq is not None:
                self.seqs.append(int(seq.group(1)))


def census(directory: Path) -> Census:
    c = Census()
    for path in sorted(directory.iterdir()):
        c.files += 1
        *lines, tail = path.read_bytes().split(b"\n")
        for line in lines:
            c.add(line.decode("utf-8", "replace"))
        m = DECODE.search(tail.decode("utf-8", "replace"))
        if tail:
            c.tails.append((float(m.group(2)), int(m.group(1))) if m else (0.0, 0))
    return c


def scrape(port: int) -> dict[str, float] | None:
    """``/metrics`` as {series: value}; None while nothing answers."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            text = r.read().decode()
    except OSError:
        return None
    series = (line.rpartition(" ") for line in text.splitlines() if line and not line.startswith("#"))
    # The engine label is the same on every series here: keys name the source alone.
    return {ENGINE.sub("", name): float(value) for name, _, value in series}


def wait_for(what: str, check: Callable[[], bool], timeout: float, why: Callable[[], str]) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:.0f}s waiting for {what}; {why()}")
        time.sleep(0.05)  # polling interval


@pytest.fixture
def procs() -> Iterator[Procs]:
    """Every process the test starts; whatever still runs at the end is killed."""
    started: Procs = []
    yield started
    for p in started:
        if p.poll() is None:
            p.kill()
        p.wait(timeout=30)


class Torture:
    """Drives writer, logrotate and agent; counts what it did for the failure summary."""

    def __init__(self, tmp: Path, procs: Procs, *, pause: bool) -> None:
        self.logrotate = require_tool("logrotate")
        self.procs, self.tmp, self.pause = procs, tmp, pause
        self.rng = random.Random(SEED)
        self.logs = tmp / "logs"
        self.logs.mkdir()
        self.log = self.logs / "app.log"
        self.agent_out = tmp / "agent.out"
        self.confs = {m: tmp / f"{m}.conf" for m in MODES}
        for mode, conf in self.confs.items():
            conf.write_text(f"{self.log} {{\n  {mode}\n  rotate 1000\n  missingok\n}}\n")
        self.port = free_port()
        self.writer = self._spawn([sys.executable, str(WRITER), str(self.log), str(RATE)], subprocess.PIPE)
        self.agent: subprocess.Popen[bytes] | None = None
        self.rotation: tuple[str, subprocess.Popen[bytes]] | None = None
        self.done = dict.fromkeys(MODES, 0)
        self.kills = self.kills_in_rotation = self.starts = 0
        self.written = -1
        self.got: dict[str, float] = {}

    def summary(self) -> str:
        counted = self.got.get(self.series("acceptmon_decode_batches_total"))
        head = (
            f"seed={SEED} pause={self.pause} rotations={sum(self.done.values())} {self.done} "
            f"kills={self.kills} (during logrotate {self.kills_in_rotation}) agent starts={self.starts} "
            f"lines written={self.written} counted={counted}"
        )
        out = self.agent_out.read_text(errors="replace") if self.agent_out.exists() else ""
        tail = "\n".join(out.replace(str(self.tmp), "<tmp>").splitlines()[-10:])
        return f"{head}\nagent log tail:\n{tail}"

    def _spawn(self, cmd: list[str], stdout: int | None = None) -> subprocess.Popen[bytes]:
        with open(self.agent_out, "ab") as err:
            p = subprocess.Popen(cmd, cwd=ROOT, stdout=stdout or err, stderr=err)
        self.procs.append(p)
        return p

    def start_agent(self) -> None:
        state = str(self.tmp / "agent-state")
        listen = f"127.0.0.1:{self.port}"
        self.agent = self._spawn(
            [
                sys.executable,
                "-m",
                "acceptmon",
                "run",
                "--listen",
                listen,
                "--state-dir",
                state,
                str(self.log),
            ]
        )
        self.starts += 1

    def checkpointed(self) -> bool:
        return (self.tmp / "agent-state" / "checkpoint.json").exists()

    def kill_agent(self) -> None:
        assert self.agent is not None
        self.agent.send_signal(signal.SIGKILL)
        self.agent.wait(timeout=30)
        self.agent = None
        self.kills += 1
        self.kills_in_rotation += self.rotation is not None

    def start_rotation(self) -> None:
        mode = MODES[sum(self.done.values()) % 2]
        if mode == "copytruncate" and self.pause:
            self.writer.send_signal(signal.SIGSTOP)
            stat = Path(f"/proc/{self.writer.pid}/stat")
            wait_for(
                "the writer to stop",
                lambda: stat.read_text().rsplit(")", 1)[1].split()[0] == "T",
                10,
                self.summary,
            )
        cmd = [self.logrotate, "-f", "-s", str(self.tmp / "logrotate.status"), str(self.confs[mode])]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.procs.append(proc)
        self.rotation = (mode, proc)

    def reap_rotation(self) -> None:
        assert self.rotation is not None
        mode, proc = self.rotation
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, f"logrotate ({mode}) failed: {err.decode()}; {self.summary()}"
        self.writer.send_signal(signal.SIGCONT)
        self.rotation = None
        self.done[mode] += 1

    def check_alive(self) -> None:
        assert self.writer.poll() is None, f"the writer died; {self.summary()}"
        if self.agent is not None and self.agent.poll() is not None:
            pytest.fail(f"the agent exited by itself with {self.agent.returncode}; {self.summary()}")

    def churn(self) -> None:
        """Rotate and kill at random until both quotas are met.

        The exactness contract starts at the agent's first checkpoint: a first
        start (no checkpoint) rightly takes files already rotated away for
        history, and under load start-up alone can outlast the first rotation.
        So the churn starts once the first agent has checkpointed.
        """
        self.start_agent()
        wait_for("the agent's first checkpoint", self.checkpointed, 60, self.summary)
        now = time.monotonic()
        next_rotation, kill_at, start_at = now + 0.5, now + self.rng.uniform(0.2, 3.0), now
        while sum(self.done.values()) < ROTATIONS or self.kills < KILLS:
            now = time.monotonic()
            self.check_alive()
            if self.rotation is not None and self.rotation[1].poll() is not None:
                self.reap_rotation()
            if self.rotation is None and now >= next_rotation:
                self.start_rotation()
                next_rotation = now + self.rng.uniform(0.3, 0.9)
                if self.agent is not None and self.rng.random() < 0.3:
                    kill_at = now + self.rng.choice((0.0, self.rng.uniform(0.0, 0.03)))
            if self.agent is not None and now >= kill_at:
                self.kill_agent()
                start_at = now + self.rng.uniform(0.0, 0.5)
            if self.agent is None and now >= start_at:
                self.start_agent()
                kill_at = now + self.rng.uniform(0.2, 3.0)
            time.sleep(0.005)  # pacing the schedule

    def stop_writing(self) -> Census:
        if self.rotation is not None:
            self.reap_rotation()
        self.writer.send_signal(signal.SIGTERM)
        out, _ = self.writer.communicate(timeout=30)
        self.written = int(out)
        return census(self.logs)

    def settle(self, at_least: float) -> dict[str, float]:
        """Wait until the agent has read everything and closed every rotated file."""
        wait_for("the agent to catch up", lambda: self._settled(at_least), 120, self.summary)
        return self.got

    def _settled(self, at_least: float) -> bool:
        self.got = scrape(self.port) or {}
        lag, files = (
            self.got.get(self.series(n))
            for n in ("acceptmon_source_lag_bytes", "acceptmon_source_open_files")
        )
        return (
            lag == 0
            and files == 1
            and self.got.get(self.series("acceptmon_decode_batches_total"), -1) >= at_least
        )

    def series(self, name: str, **labels: str) -> str:
        pairs = {**labels, "source": str(self.log)}
        return name + "{" + ",".join(f'{k}="{v}"' for k, v in sorted(pairs.items())) + "}"

    def expected(self, lines: int, decodes: Decodes) -> dict[str, float]:
        interval = int(synth.BASE_ARGS["decode_log_interval"])
        want = {
            self.series("acceptmon_lines_total"): float(lines),
            self.series("acceptmon_decode_batches_total"): float(len(decodes)),
            self.series("acceptmon_spec_accept_length_intervals_sum"): sum(al for al, _ in decodes),
            self.series("acceptmon_spec_verify_rounds_total"): float(interval * sum(r for _, r in decodes)),
        }
        for le in BOUNDS:
            n = sum(1 for al, _ in decodes if al <= float(le))
            want[self.series("acceptmon_spec_accept_length_intervals_bucket", le=le)] = float(n)
        return want


def out_of_range(
    got: dict[str, float], low: dict[str, float], high: dict[str, float]
) -> dict[str, tuple[float, float | None, float]]:
    return {k: (low[k], got.get(k), high[k]) for k in low if not low[k] <= got.get(k, -1.0) <= high[k]}


@pytest.mark.parametrize("pause", [True, False], ids=["writer-paused-in-copytruncate", "writer-running"])
def test_every_line_once_under_logrotate_and_sigkill(tmp_path: Path, procs: Procs, pause: bool) -> None:
    t = Torture(tmp_path, procs, pause=pause)
    t.churn()
    files = t.stop_writing()
    if t.agent is None:
        t.start_agent()
    # The workload itself: every rotation kept a copy and no line is in two files.
    assert files.files == sum(t.done.values()) + 1, t.summary()
    assert len(set(files.seqs)) == len(files.seqs), t.summary()
    lost = sorted(set(range(t.written)) - set(files.seqs))
    assert not (pause and (lost or files.tails)), f"lost {len(lost)} lines while paused; {t.summary()}"
    low = t.expected(files.lines, files.decodes)
    maybe = [(accept_len(s), running(s)) for s in lost] + files.tails
    high = t.expected(files.lines + len(maybe), files.decodes + maybe)
    got = t.settle(at_least=low[t.series("acceptmon_decode_batches_total")])
    print(t.summary().splitlines()[0], f"in files={len(files.decodes)} lost by copytruncate={len(lost)}")
    assert out_of_range(got, low, high) == {}, t.summary()
    # A clean stop after all that, and a restart, must neither lose nor repeat.
    assert t.agent is not None
    t.agent.send_signal(signal.SIGTERM)
    assert t.agent.wait(timeout=30) == 0, t.summary()
    t.start_agent()
    again = t.settle(at_least=got[t.series("acceptmon_decode_batches_total")])
    assert {k: again.get(k) for k in low} == {k: got[k] for k in low}, t.summary()
