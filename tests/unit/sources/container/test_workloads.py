"""Container instances → workloads: pod names, kubelet's and Docker's trees, replicas side by side."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest

from acceptmon.sources.container import docker, kubelet
from acceptmon.sources.container.tree import discover, map_path, root_of
from acceptmon.sources.container.workloads import Instance, first_time, series_of, workload_of

CRI = "2026-11-30T12:00:0{s}.000000001Z stdout F line {s}\n"


@pytest.mark.parametrize(
    ("pod", "workload"),
    [
        ("sglang-7d9f8b6c4-x2x9z", "sglang"),  # Deployment: ReplicaSet hash + random suffix
        ("sglang-qwen3-5c8d7f9b6-q4w8n", "sglang-qwen3"),
        ("vllm-ds-k2xbz", "vllm-ds"),  # DaemonSet / Job: random suffix only
        ("sglang-0", "sglang-0"),  # StatefulSet ordinal kept
        ("sglang-lws-0-1", "sglang-lws-0-1"),  # LeaderWorkerSet group and worker index kept
        ("sglang", "sglang"),
        ("decode-abcde", "decode-abcde"),  # vowels: not a generated suffix
        ("sglang-22222", "sglang-22222"),  # all digits: an ordinal, not a suffix
    ],
)
def test_workload_of_a_pod_name(pod: str, workload: str) -> None:
    assert workload_of(pod) == workload


def _file(path: Path, text: str, gz: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(text.encode()) if gz else text.encode())


def test_kubelet_tree_restarts_rotations_and_pods(tmp_path: Path) -> None:
    a = tmp_path / "llm_sglang-7d9f8b6c4-x2x9z_0f7c2a5e-1b2c-4d5e-8f90-1234567890ab" / "server"
    b = tmp_path / "llm_sglang-5c8d7f9b6-q4w8n_9a8b7c6d-5e4f-4a3b-9c2d-abcdef012345" / "server"
    _file(a / "0.log.20261130-120000.gz", CRI.format(s=1), gz=True)
    _file(a / "0.log.20261130-120500", CRI.format(s=2))
    _file(a / "0.log", CRI.format(s=3))
    _file(a / "1.log", CRI.format(s=4))
    _file(a / "1.log.tmp", "kubelet compressing")
    _file(b / "0.log", CRI.format(s=6))
    _file(tmp_path / "not-a-pod-dir" / "x" / "0.log", CRI.format(s=0))
    _file(
        tmp_path / "llm_sglang-7d9f8b6c4-x2x9z_0f7c2a5e-1b2c-4d5e-8f90-1234567890ab" / "sidecar" / "0.log",
        "x\n",
    )
    found = discover(f"kubernetes:{tmp_path}", kubelet.Filters(containers=("server",)))
    assert list(found) == ["llm/sglang/server"]
    insts = found["llm/sglang/server"]
    assert [(i.label("pod"), i.restart) for i in insts] == [
        ("sglang-7d9f8b6c4-x2x9z", 0),
        ("sglang-7d9f8b6c4-x2x9z", 1),
        ("sglang-5c8d7f9b6-q4w8n", 0),
    ]
    assert [os.path.basename(f) for f in insts[0].files] == [
        "0.log.20261130-120000.gz",
        "0.log.20261130-120500",
        "0.log",
    ]
    assert insts[0].started == first_time(str(a / "0.log.20261130-120000.gz"))
    assert dict(insts[2].labels) == {
        "namespace": "llm",
        "pod": "sglang-5c8d7f9b6-q4w8n",
        "container": "server",
    }


def test_kubelet_filters(tmp_path: Path) -> None:
    for ns, pod in (("llm", "sglang-0"), ("kube-system", "coredns-5d78c9869d-x2x9z"), ("llm", "router-0")):
        _file(tmp_path / f"{ns}_{pod}_0f7c2a5e-1b2c-4d5e-8f90-1234567890ab" / "c" / "0.log", CRI.format(s=1))
    assert sorted(discover(f"kubernetes:{tmp_path}")) == [
        "kube-system/coredns/c",
        "llm/router-0/c",
        "llm/sglang-0/c",
    ]
    only = kubelet.Filters.of("llm", "sglang", None)
    assert sorted(discover(f"kubernetes:{tmp_path}", only)) == ["llm/sglang-0/c"]


def _pod(name: str, started: float) -> Instance:
    return Instance("ns/sglang/c", f"/{name}/0.log", (f"/{name}/0.log",), started, 0, (("pod", name),))


def test_replicas_side_by_side_take_slots_that_pod_churn_reuses() -> None:
    old, new = _pod("sglang-7d9f8b6c4-x2x9z", 1000.0), _pod("sglang-7d9f8b6c4-q4w8n", 1500.0)
    # The old pod stopped 100 s after the new one started: a rollout, one series.
    assert {k: len(v) for k, v in series_of([new, old], 600, lambda i: 1600.0).items()} == {"ns/sglang/c": 2}
    # The old pod went on for an hour beside it: two replicas, two series.
    split = series_of([new, old], 600, lambda i: 5100.0)
    assert {k: [i.path for i in v] for k, v in split.items()} == {
        "ns/sglang/c": [old.path],
        "ns/sglang/c#2": [new.path],
    }
    # Both replicas replaced, twice, by a rolling update: still two series.
    ends = {"a": 5000.0, "b": 5000.0, "c": 9000.0, "d": 9000.0, "e": 20000.0, "f": 20000.0}
    pods = [_pod(n, s) for n, s in zip("abcdef", (0.0, 100.0, 5000.0, 5050.0, 9000.0, 9050.0), strict=True)]
    churned = series_of(pods, 600, lambda i: ends[i.label("pod")])
    assert sorted(churned) == ["ns/sglang/c", "ns/sglang/c#2"]
    assert [i.label("pod") for i in churned["ns/sglang/c"]] == ["a", "c", "e"]
    assert [i.label("pod") for i in churned["ns/sglang/c#2"]] == ["b", "d", "f"]


def test_docker_tree_names_and_recreated_containers(tmp_path: Path) -> None:
    def container(cid: str, name: str, created: str, lines: str, rotated: str = "") -> None:
        d = tmp_path / cid
        _file(d / f"{cid}-json.log", lines)
        if rotated:
            _file(d / f"{cid}-json.log.1", rotated)
            _file(d / f"{cid}-json.log.2.gz", rotated, gz=True)
        config = {"Name": f"/{name}", "Created": created, "Config": {"Env": ["HF_TOKEN=hf_secret"]}}
        _file(d / "config.v2.json", json.dumps(config))

    record = json.dumps({"log": "x\n", "stream": "stdout", "time": "2026-11-30T12:00:00Z"}) + "\n"
    container("b" * 64, "sglang", "2026-11-30T13:00:00.5Z", record)
    container("a" * 64, "sglang", "2026-11-30T12:00:00.123456789Z", record, rotated=record)
    container("c" * 64, "other", "2026-11-30T12:00:00Z", record)
    (tmp_path / ("d" * 64)).mkdir()
    (tmp_path / ("d" * 64) / "config.v2.json").write_text("{not json")
    found = discover(f"docker:{tmp_path}")
    assert sorted(found) == ["other", "sglang"]
    first, second = found["sglang"]
    assert first.path.startswith(str(tmp_path / ("a" * 64)))
    assert [os.path.basename(f)[64:] for f in first.files] == ["-json.log.2.gz", "-json.log.1", "-json.log"]
    assert second.path.startswith(str(tmp_path / ("b" * 64)))
    assert docker.instances(str(tmp_path), ("other",))[0].series == "other"


def test_roots_default_to_the_runtimes_own() -> None:
    assert root_of("kubernetes:") == "/var/log/pods"
    assert root_of("docker:") == "/var/lib/docker/containers"
    assert root_of("kubernetes:/mnt/pods") == "/mnt/pods"


def test_path_map_takes_the_longest_prefix() -> None:
    path_map = {"/models": "/mnt/models", "/models/drafts": "/data/drafts"}
    assert map_path("/models/Qwen3-32B", path_map) == "/mnt/models/Qwen3-32B"
    assert map_path("/models/drafts/eagle3", path_map) == "/data/drafts/eagle3"
    assert map_path("/models", path_map) == "/mnt/models"
    assert map_path("/modelsX/a", path_map) == "/modelsX/a"
    assert map_path("/other/a", None) == "/other/a"
