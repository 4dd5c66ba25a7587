"""A node's container log trees, as kubelet and Docker write them, holding the seed incident.

Three runs of one workload: a good draft; a container restart (kubelet's
``1.log``) with another draft whose ~18 KB ``server_args`` line the runtime
splits into pieces; then a rollout (a new pod, or a re-created Docker
container with the same name) back to the good draft. Used by the tests and
the container demos of the README.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from acceptmon.testing import synth
from acceptmon.testing.container import cri_lines, json_file_lines

T0 = datetime(2026, 11, 30, 12, 0, 0)
GOOD_DRAFT = "/models/Qwen3-32B-EAGLE3"
BAD_DRAFT = "/models/Qwen3-32B-EAGLE3-wrong-layers"
NAMESPACE = "llm"
WORKLOAD = "sglang-qwen3"
CONTAINER = "sglang"
#: Deployment pods: ``<workload>-<ReplicaSet hash>-<random>``.
POD_A = f"{WORKLOAD}-7d9f8b6c4-x2x9z"
POD_B = f"{WORKLOAD}-5c8d7f9b6-q4w8n"
UID_A = "0f7c2a5e-1b2c-4d5e-8f90-1234567890ab"
UID_B = "9a8b7c6d-5e4f-4a3b-9c2d-abcdef012345"
SERIES = f"{NAMESPACE}/{WORKLOAD}/{CONTAINER}"

#: One run: (start, draft model path, accept-length level, Decode intervals).
RunSpec = tuple[datetime, str, float, int]


def incident_runs(intervals: int = 150) -> list[RunSpec]:
    step = timedelta(minutes=30)
    return [
        (T0, GOOD_DRAFT, 2.45, intervals),
        (T0 + step, BAD_DRAFT, 1.55, intervals),
        (T0 + 2 * step, GOOD_DRAFT, 2.45, intervals),
    ]


def run_lines(spec: RunSpec, seed: int, *, long_args: bool = False) -> list[str]:
    """One run's log: start-up (its server_args ~18 KB when ``long_args``), traffic, shutdown."""
    start, draft, level, n = spec
    extra = {"cuda_graph_bs": list(range(1, 3100))} if long_args else {}
    lines = synth.startup(start, seed, speculative_draft_model_path=draft, **extra)
    lines += synth.traffic(random.Random(seed), start + timedelta(seconds=60), n, level)
    end = start + timedelta(seconds=60 + 2 * n)
    return lines + synth.shutdown(end)


def kubelet_tree(root: str, intervals: int = 150) -> list[str]:
    """The incident under ``root`` as kubelet lays it out; the files written, in order."""
    runs = incident_runs(intervals)
    pod_a = os.path.join(root, f"{NAMESPACE}_{POD_A}_{UID_A}", CONTAINER)
    pod_b = os.path.join(root, f"{NAMESPACE}_{POD_B}_{UID_B}", CONTAINER)
    files = [
        (os.path.join(pod_a, "0.log"), run_lines(runs[0], 1)),
        (os.path.join(pod_a, "1.log"), run_lines(runs[1], 2, long_args=True)),
        (os.path.join(pod_b, "0.log"), run_lines(runs[2], 3)),
    ]
    for path, lines in files:
        _write(path, cri_lines(lines, T0))
    return [p for p, _ in files]


def docker_tree(root: str, intervals: int = 150) -> list[str]:
    """The incident under ``root`` as Docker's json-file driver lays it out: container ``sglang``
    restarted in place (one file), then removed and re-created with the same name (a new id)."""
    runs = incident_runs(intervals)
    first = run_lines(runs[0], 1) + run_lines(runs[1], 2, long_args=True)
    ids = ("a1" * 32, "b2" * 32)
    for cid, lines, created in ((ids[0], first, runs[0][0]), (ids[1], run_lines(runs[2], 3), runs[2][0])):
        directory = os.path.join(root, cid)
        _write(os.path.join(directory, f"{cid}-json.log"), json_file_lines(lines, T0))
        config = {"ID": cid, "Name": f"/{CONTAINER}", "Created": _rfc3339(created), "Config": {"Env": []}}
        _write(os.path.join(directory, "config.v2.json"), [json.dumps(config)])
    return [os.path.join(root, cid, f"{cid}-json.log") for cid in ids]


def _rfc3339(ts: datetime) -> str:
    return ts.replace(tzinfo=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _write(path: str, lines: list[str], opener: Callable[..., object] = open) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(line + "\n" for line in lines)
