"""Issue 4's must-show: the EAGLE-3 layer-id incident, live, with real files.

A real ``acceptmon run`` process follows a real log while the test plays an
SGLang server restarted three times: once at ~47% acceptance, once after the
draft model's ``config.json`` was edited to capture the embeddings (~19%),
once after the edit was reverted (~47% again). Nothing in the log shows the
edit; the agent must find it in the config.json it reads at each start, fire
one critical finding naming the key, resolve it after the revert, and keep
the run history across its own restart. No other critical finding may show
up at any poll along the way.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import pytest
from prometheus_client.parser import text_string_to_metric_families

from acceptmon.testing import synth
from tests.support.sshd import free_port

pytestmark = pytest.mark.system
T = TypeVar("T")
Finding = dict[str, Any]

DROP = "acceptance_drop_after_change"
KEY = "draft.eagle_config.eagle_aux_hidden_state_layer_ids"
GOOD, BAD = [2, 30, 58], [-1, 2, 30]
GOOD_LEN, BAD_LEN = 2.41, 1.57
INTERVALS = 70
DRAFT_CONFIG: dict[str, Any] = {
    "architectures": ["LlamaForCausalLMEagle3"],
    "model_type": "llama",
    "hidden_size": 5120,
    "intermediate_size": 25600,
    "num_attention_heads": 64,
    "num_key_value_heads": 8,
    "num_hidden_layers": 1,
    "max_position_embeddings": 40960,
    "rms_norm_eps": 1e-06,
    "rope_theta": 1000000.0,
    "vocab_size": 151936,
    "draft_vocab_size": 32000,
    "target_hidden_size": 5120,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "eagle_config": {"eagle_aux_hidden_state_layer_ids": GOOD, "use_aux_hidden_state": True},
}
LAUNCH = "model: Qwen/Qwen3-32B\nreplicas: {}\n"


def poll(probe: Callable[[], T | None], timeout: float, what: str, out: Path | None = None) -> T:
    """``probe()`` until it returns something other than None; fail at the deadline."""
    deadline = time.monotonic() + timeout
    while (value := probe()) is None:
        if time.monotonic() > deadline:
            detail = out.read_text(errors="replace")[-4000:] if out else ""
            raise AssertionError(f"timed out after {timeout}s waiting for {what}\n{detail}")
        time.sleep(0.05)
    return value


class ServerLog:
    """An SGLang server's log, written the way the server writes it (appended)."""

    def __init__(self, path: Path, draft: Path, start: datetime) -> None:
        self.path, self.draft, self.ts = path, draft, start
        self.rng = random.Random(20261128)
        self.lines = 0
        self.running = 12

    def _append(self, lines: list[str]) -> None:
        with self.path.open("a") as f:
            f.write("".join(line + "\n" for line in lines))
        self.lines += len(lines)

    def start(self) -> None:
        seed = self.rng.randrange(10**9)
        self._append(synth.startup(self.ts, seed, speculative_draft_model_path=str(self.draft)))
        self.ts += timedelta(seconds=46)

    def serve(self, accept_len: float, intervals: int) -> None:
        """Decode lines every ~1 s (40 steps at ~40 tok/s) with the load drifting, plus prefills."""
        lines = []
        for i in range(intervals):
            self.ts += timedelta(seconds=self.rng.choice((1, 1, 1, 2)))
            self.running = max(4, min(40, self.running + self.rng.choice((-3, -1, 0, 0, 1, 3))))
            value = max(1.0, min(4.0, self.rng.gauss(accept_len, 0.1)))
            lines.append(synth.decode_line(self.ts, value, self.running))
            if i % 5 == 0:
                lines.append(synth.prefill_line(self.ts, self.rng.choice((512, 1873, 3795)), self.running))
        self._append(lines)

    def stop(self) -> None:
        self.ts += timedelta(seconds=2)
        self._append(synth.shutdown(self.ts))
        self.ts += timedelta(seconds=8)


class Agent:
    """``python -m acceptmon run`` on the log as a child process, queried over HTTP."""

    def __init__(self, config: Path, log: ServerLog) -> None:
        self.log, self.source = log, str(log.path)
        port = free_port()
        self.url, self.out = f"http://127.0.0.1:{port}", config.parent / "agent.out"
        args = [sys.executable, "-m", "acceptmon", "run", "--config", str(config), "--listen"]
        args += [f"127.0.0.1:{port}", "--state-dir", str(config.parent / "state"), self.source]
        with self.out.open("ab") as out:
            self.proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            poll(lambda: self._get("/healthz"), 30, "the agent to answer /healthz", self.out)
        except BaseException:
            self.proc.kill()
            self.proc.wait()
            raise

    def _get(self, path: str) -> bytes | None:
        assert self.proc.poll() is None, f"agent exited:\n{self.out.read_text(errors='replace')}"
        try:
            with urllib.request.urlopen(self.url + path, timeout=2) as resp:
                return bytes(resp.read())
        except OSError:
            return None

    def json(self, path: str) -> Any:
        return json.loads(poll(lambda: self._get(path), 5, path, self.out))

    def metric(self, name: str, **labels: str) -> float | None:
        text = poll(lambda: self._get("/metrics"), 5, "/metrics", self.out).decode()
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                    return float(s.value)
        return None

    def drop(self) -> Finding | None:
        """The one drop finding, if any; fails on any other critical finding that is active."""
        found: list[Finding] = self.json("/api/findings")
        stray = [f for f in found if f["active"] and f["severity"] == "critical" and f["rule"] != DROP]
        drops = [f for f in found if f["rule"] == DROP]
        assert not stray and len(drops) <= 1, json.dumps(found, indent=1)
        assert all(f["source"] == self.source and f["run_id"] == "r2" for f in drops), drops
        return drops[0] if drops else None

    def read_all(self) -> None:
        """Until the agent has read every line written so far."""
        want = self.log.lines

        def done() -> bool | None:
            self.drop()
            return self.metric("acceptmon_lines_total", source=self.source) == want or None

        poll(done, 15, f"the agent to read {want} lines", self.out)

    def quiet(self, runs: int) -> None:
        """A config edit the agent must not act on: the run count holds for 2 s.

        The agent checks watched files at most once a second, so two seconds
        of silence mean it has seen the edit and chosen to wait for a start.
        """
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            assert len(listing := self.json("/api/runs")) == runs, listing
            self.drop()
            time.sleep(0.1)

    def stop(self) -> int:
        """SIGTERM, as systemd stops it; a hang is killed and reported."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError("agent ignored SIGTERM") from None
        return self.proc.returncode


def write_draft(draft: Path, layers: list[int]) -> None:
    """Replaced whole, as an editor or ``huggingface-cli download`` does."""
    eagle = {**DRAFT_CONFIG["eagle_config"], "eagle_aux_hidden_state_layer_ids": layers}
    tmp = draft / ".config.json.tmp"
    tmp.write_text(json.dumps({**DRAFT_CONFIG, "eagle_config": eagle}, indent=2))
    tmp.replace(draft / "config.json")


@pytest.fixture
def case(tmp_path: Path) -> Iterator[tuple[Path, ServerLog, Path]]:
    draft = tmp_path / "Qwen3-32B-EAGLE3"
    draft.mkdir()
    write_draft(draft, GOOD)
    (tmp_path / "launch.yaml").write_text(LAUNCH.format(1))
    config = tmp_path / "acceptmon.yaml"
    config.write_text(f"watch_files:\n  - {tmp_path / 'launch.yaml'}\n")
    # Log time runs from 4 min ago to ~3 min ahead, so the running server's
    # Decode lines are recent and the stall rule (a warning) stays quiet.
    start = datetime.now().replace(microsecond=0) - timedelta(minutes=4)
    log = ServerLog(tmp_path / "sglang.log", draft, start)
    log.path.touch()
    yield config, log, draft


def test_eagle3_layer_change_found_named_resolved_and_remembered(case: tuple[Path, ServerLog, Path]) -> None:
    config, log, draft = case
    agent = Agent(config, log)
    try:
        finding = _bad_layers_fire(agent, log, draft)
        _revert_resolves(agent, log, draft, finding)
        expected = [("r1", None), ("r2", (GOOD, BAD)), ("r3", (BAD, GOOD))]
        assert _runs(agent) == expected
        # /api/runs is compact; each run's full snapshot is at /api/runs/<run_id>.
        assert all("config" not in run for run in agent.json("/api/runs"))
        full = [agent.json(f"/api/runs/{run_id}")[0] for run_id, _ in expected]
        _check_snapshots(full, draft, config.parent / "launch.yaml")
        assert agent.stop() == 0

        # The agent itself restarts: run history comes back from the state dir, nothing is re-read.
        agent = Agent(config, log)
        lines = poll(lambda: agent.metric("acceptmon_lines_total", source=agent.source), 10, "counters")
        assert lines == log.lines
        assert _runs(agent) == expected
    finally:
        agent.stop()


def _bad_layers_fire(agent: Agent, log: ServerLog, draft: Path) -> Finding:
    log.start()
    log.serve(GOOD_LEN, INTERVALS)
    log.stop()
    agent.read_all()
    assert agent.drop() is None
    # Server down: the draft now takes the embeddings (-1) instead of layer 58.
    write_draft(draft, BAD)
    agent.quiet(runs=1)
    log.start()
    log.serve(BAD_LEN, INTERVALS)
    agent.read_all()
    finding = poll(lambda: _if(agent.drop(), active=True), 15, "the drop finding", agent.out)
    assert (finding["severity"], finding["baseline_run_id"]) == ("critical", "r1")
    assert KEY in finding["changed_keys"], finding
    assert {"key": KEY, "old": GOOD, "new": BAD} in finding["diff"]["changed"]
    assert finding["before_accept_len"] == pytest.approx(GOOD_LEN, abs=0.08)
    assert finding["after_accept_len"] == pytest.approx(BAD_LEN, abs=0.08)
    labels = {"rule": DROP, "source": agent.source, "severity": "critical"}
    assert agent.metric("acceptmon_finding_active", **labels) == 1.0
    return finding


def _revert_resolves(agent: Agent, log: ServerLog, draft: Path, finding: Finding) -> None:
    # The operator reverts the file while the bad server still serves, then restarts it.
    write_draft(draft, GOOD)
    log.serve(BAD_LEN, 8)
    agent.read_all()
    agent.quiet(runs=2)
    log.stop()
    log.start()
    log.serve(GOOD_LEN, INTERVALS)
    agent.read_all()
    resolved = poll(lambda: _if(agent.drop(), active=False), 15, "the finding to resolve", agent.out)
    assert resolved["key"] == finding["key"] and resolved["resolved_at"]
    labels = {"rule": DROP, "source": agent.source, "severity": "critical"}
    assert agent.metric("acceptmon_finding_active", **labels) == 0.0  # same list as /api/findings


def _if(f: Finding | None, active: bool) -> Finding | None:
    return f if f is not None and f["active"] is active else None


def _runs(agent: Agent) -> list[tuple[str, Any]]:
    """(run id, (old, new) layer ids) per run in /api/runs; no other key may have changed."""
    out: list[tuple[str, Any]] = []
    for run in agent.json("/api/runs"):
        diff = run["diff"] or {"changed": [], "added": [], "removed": []}
        assert run["source"] == agent.source and not diff["added"] and not diff["removed"], run
        assert {c["key"] for c in diff["changed"]} <= {KEY}, run
        out.append((run["run_id"], next(((c["old"], c["new"]) for c in diff["changed"]), None)))
    return out


def _check_snapshots(runs: list[dict[str, Any]], draft: Path, launch: Path) -> None:
    """Each snapshot: server args without the seed, the draft config as read, the watched file."""
    for run, layers in zip(runs, [GOOD, BAD, GOOD], strict=True):
        cfg = run["config"]
        assert "random_seed" not in cfg["server_args"]
        assert cfg["server_args"]["speculative_draft_model_path"] == str(draft)
        assert cfg["draft_config"]["eagle_config"]["eagle_aux_hidden_state_layer_ids"] == layers
        assert cfg["draft_config"]["architectures"] == ["LlamaForCausalLMEagle3"]
        assert cfg["watched"] == {str(launch): {"model": "Qwen/Qwen3-32B", "replicas": 1}}


def test_watched_file_edit_opens_a_segment_only_while_the_server_runs(
    case: tuple[Path, ServerLog, Path],
) -> None:
    config, log, _ = case
    launch = config.parent / "launch.yaml"
    key = f"watched.{launch}.replicas"
    agent = Agent(config, log)
    try:
        log.start()
        log.serve(GOOD_LEN, 10)
        agent.read_all()
        launch.write_text(LAUNCH.format(2))
        runs = poll(lambda: _if_count(agent.json("/api/runs"), 2), 10, "a config segment", agent.out)
        assert runs[1]["started"] is None and runs[1]["diff"]["changed"] == [{"key": key, "old": 1, "new": 2}]

        log.stop()
        launch.write_text(LAUNCH.format(3))
        agent.quiet(runs=2)
        log.start()
        agent.read_all()
        runs = agent.json("/api/runs")
        assert [r["run_id"] for r in runs] == ["r1", "r2", "r3"]
        assert runs[2]["diff"] == {"changed": [{"key": key, "old": 2, "new": 3}], "added": [], "removed": []}
    finally:
        agent.stop()


def _if_count(runs: list[dict[str, Any]], count: int) -> list[dict[str, Any]] | None:
    return runs if len(runs) == count else None


def test_agent_started_after_the_incident_still_reports_it(case: tuple[Path, ServerLog, Path]) -> None:
    """The whole incident is already in the log (the agent was deployed or down meanwhile)."""
    config, log, _ = case
    for accept_len in (GOOD_LEN, BAD_LEN, GOOD_LEN):
        log.start()
        log.serve(accept_len, INTERVALS)
        log.stop()
    agent = Agent(config, log)
    try:
        agent.read_all()
        drop = poll(lambda: _if(agent.drop(), active=False), 10, "the drop finding, resolved", agent.out)
        # Every start read today's config.json: the edit itself is gone, the drop is not.
        assert (drop["run_id"], drop["baseline_run_id"], drop["changed_keys"]) == ("r2", "r1", [])
        assert drop["before_accept_len"] == pytest.approx(GOOD_LEN, abs=0.08)
        assert drop["after_accept_len"] == pytest.approx(BAD_LEN, abs=0.08)
        labels = {"rule": DROP, "source": agent.source, "severity": "critical"}
        assert agent.metric("acceptmon_findings_total", **labels) == 1.0
        assert agent.metric("acceptmon_finding_active", **labels) == 0.0
    finally:
        agent.stop()
