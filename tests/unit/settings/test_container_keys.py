"""The keys of kubernetes: and docker: sources: kinds, filters, path_map, and where they do not belong."""

from __future__ import annotations

import pytest

from acceptmon.apps.agent.origins import container_identity
from acceptmon.labels import SourceIdentity
from acceptmon.settings import SettingsError, from_mapping, load
from acceptmon.sources.container.kubelet import Filters


def test_container_sources_are_their_own_kinds() -> None:
    cfg = load(None, ["kubernetes:", "docker:/srv/docker/containers"])
    assert [s.kind for s in cfg.sources] == ["kubernetes", "docker"]


def test_filters_and_path_map_are_read() -> None:
    cfg = from_mapping(
        {
            "sources": [
                {
                    "path": "kubernetes:/var/log/pods",
                    "name": "pods",
                    "namespaces": ["inference", "llm"],
                    "pod_prefix": "sglang-",
                    "containers": "sglang",
                    "path_map": {"/models": "/mnt/models"},
                    "handover_s": 60,
                }
            ]
        }
    )
    src = cfg.sources[0]
    filters = Filters.of(src.option("namespaces"), src.option("pod_prefix"), src.option("containers"))
    assert filters == Filters(("inference", "llm"), "sglang-", ("sglang",))
    assert dict(src.option("path_map")) == {"/models": "/mnt/models"}
    assert src.option("handover_s") == 60


def test_wrong_values_and_misplaced_keys_are_problems() -> None:
    with pytest.raises(SettingsError) as err:
        from_mapping(
            {
                "sources": [
                    {
                        "path": "kubernetes:",
                        "namespaces": [1],
                        "path_map": {"models": "/mnt"},
                        "handover_s": -1,
                    },
                    {"path": "/var/log/sglang.log", "pod_prefix": "x"},
                    {"path": "docker:", "pod_prefix": 3},
                ]
            }
        )
    text = str(err.value)
    for needle in (
        "sources[0].namespaces: expected a name or a list of names",
        "sources[0].path_map: 'models': both sides must be absolute paths",
        "sources[0].handover_s",
        "sources[1].pod_prefix: only kubernetes: and docker: sources use it",
        "sources[2].pod_prefix: expected a string",
    ):
        assert needle in text


def test_the_node_is_the_host_and_a_label(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NODE_NAME", "gpu-node-7")
    kube, docker = load(None, ["kubernetes:", "docker:"]).sources
    base = SourceIdentity("agent-pod", (("team", "inference"),))
    assert container_identity(kube, base) == SourceIdentity(
        "gpu-node-7", (("node", "gpu-node-7"), ("team", "inference"))
    )
    assert container_identity(docker, base).host == "gpu-node-7"
    monkeypatch.delenv("NODE_NAME")
    assert container_identity(docker, base).host == "agent-pod"
