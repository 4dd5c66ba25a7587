"""Container logs followed live as workloads: restarts and rollouts continue one series, in order."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from acceptmon.clock import ManualClock
from acceptmon.model import Chunk
from acceptmon.sources.container.follow import WorkloadSource

UID = "0f7c2a5e-1b2c-4d5e-8f90-1234567890ab"
POD_A = "sglang-7d9f8b6c4-x2x9z"
POD_B = "sglang-5c8d7f9b6-q4w8n"
SERIES = "pods:llm/sglang/server"


def container_dir(root: Path, pod: str) -> Path:
    d = root / f"llm_{pod}_{UID}" / "server"
    d.mkdir(parents=True, exist_ok=True)
    return d


def append(path: Path, *texts: str, when: str = "2026-11-30T12:00:00Z") -> None:
    with path.open("a") as f:
        f.writelines(f"{when} stdout F {t}\n" for t in texts)


def texts(chunks: list[Chunk]) -> list[tuple[str, str]]:
    return [(c.source, line) for c in chunks for line in c.lines]  # CRI unwrapped by the splitter


class Follow:
    def __init__(self, root: Path, **kw: float) -> None:
        self.clock = ManualClock(time.time())
        self.src = WorkloadSource("pods", f"kubernetes:{root}", clock=self.clock, rescan_interval=1.0, **kw)

    def poll(self) -> list[tuple[str, str]]:
        """Every line available now (a rescan first), each chunk committed."""
        self.clock.advance(1.0)
        out: list[Chunk] = []
        while True:
            got = self.src.poll()
            if not got:
                return texts(out)
            out += got
            self.src.commit(got[-1])


def test_a_restart_continues_the_series_in_order(tmp_path: Path) -> None:
    a = container_dir(tmp_path, POD_A)
    append(a / "0.log", "run 1 start", "run 1 decode")
    f = Follow(tmp_path)
    assert f.poll() == [(SERIES, "run 1 start"), (SERIES, "run 1 decode")]
    append(a / "0.log", "run 1 last line")
    append(a / "1.log", "run 2 start")
    assert f.poll() == [(SERIES, "run 1 last line"), (SERIES, "run 2 start")]
    assert dict(f.src.identity(SERIES))["pod"] == POD_A


def test_a_rollout_waits_for_the_old_pod_to_go(tmp_path: Path) -> None:
    a = container_dir(tmp_path, POD_A)
    append(a / "0.log", "old pod serving")
    f = Follow(tmp_path, handover_s=30.0)
    assert f.poll() == [(SERIES, "old pod serving")]
    b = container_dir(tmp_path, POD_B)
    append(b / "0.log", "new pod start", when="2026-11-30T12:05:00Z")
    append(a / "0.log", "old pod still serving")
    assert f.poll() == [(SERIES, "old pod still serving")]  # the new pod's lines wait
    append(a / "0.log", "old pod shutting down")
    shutil.rmtree(a.parent)  # the rollout deleted the old pod: its last lines are still read
    assert f.poll() == [(SERIES, "old pod shutting down"), (SERIES, "new pod start")]
    assert dict(f.src.identity(SERIES))["pod"] == POD_B
    assert list(f.src.checkpoint()["members"]) == [str(b / "0.log")]  # the gone pod is forgotten


def test_a_quiet_old_pod_hands_over(tmp_path: Path) -> None:
    a = container_dir(tmp_path, POD_A)
    append(a / "0.log", "old pod")
    f = Follow(tmp_path, handover_s=30.0)
    f.poll()
    b = container_dir(tmp_path, POD_B)
    append(b / "0.log", "new pod", when="2026-11-30T12:05:00Z")
    assert f.poll() == []
    old = f.clock.now() - 31
    os.utime(a / "0.log", (old, old))
    assert f.poll() == [(SERIES, "new pod")]


def test_a_restart_resumes_from_the_checkpoint_without_loss_or_repeat(tmp_path: Path) -> None:
    a = container_dir(tmp_path, POD_A)
    append(a / "0.log", "one", "two")
    f = Follow(tmp_path)
    assert [t for _, t in f.poll()] == ["one", "two"]
    saved = f.src.checkpoint()
    f.src.close()
    append(a / "0.log", "three")
    append(a / "1.log", "four")
    again = Follow(tmp_path)
    again.src.restore(saved)
    assert [t for _, t in again.poll()] == ["three", "four"]


def test_kubelet_rotation_loses_and_repeats_nothing(tmp_path: Path) -> None:
    a = container_dir(tmp_path, POD_A)
    append(a / "0.log", *(f"line {i}" for i in range(5)))
    f = Follow(tmp_path)
    seen = [t for _, t in f.poll()]
    append(a / "0.log", "line 5")
    os.rename(a / "0.log", a / "0.log.20261130-120500")  # kubelet's rotation: rename, reopen
    append(a / "0.log", "line 6")
    seen += [t for _, t in f.poll()]
    assert seen == [f"line {i}" for i in range(7)]


def test_from_the_end_skips_what_was_there_but_reads_new_instances_whole(tmp_path: Path) -> None:
    a = container_dir(tmp_path, POD_A)
    append(a / "0.log", "history")
    clock = ManualClock(time.time())
    src = WorkloadSource(
        "pods", f"kubernetes:{tmp_path}", clock=clock, from_beginning=False, rescan_interval=1.0
    )
    assert src.poll() == []
    append(a / "0.log", "new line")
    append(a / "1.log", "restart start")
    clock.advance(1.0)
    got = texts(src.poll()) + texts(src.poll())
    assert [t for _, t in got] == ["new line", "restart start"]


def test_a_deleted_workload_stops_being_a_series_and_stays_up(tmp_path: Path) -> None:
    a = container_dir(tmp_path, POD_A)
    other = tmp_path / f"llm_router-0_{UID}" / "router"
    other.mkdir(parents=True)
    append(a / "0.log", "served")
    append(other / "0.log", "routing")
    f = Follow(tmp_path)
    f.poll()
    assert f.src.series() == ["pods:llm/router-0/router", SERIES]
    shutil.rmtree(a.parent)
    f.poll()
    assert f.src.series() == ["pods:llm/router-0/router"]
    assert f.src.identity(SERIES) == ()
    assert f.src.health().up
    assert list(f.src.checkpoint()["members"]) == [str(other / "0.log")]
