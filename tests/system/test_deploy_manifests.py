"""The container image and Kubernetes manifests under deploy/ against offline tools.

No cluster and no container build run here: the manifests are checked against the
Kubernetes OpenAPI schemas (``kubernetes-validate``, strict: unknown fields fail) and
the Prometheus Operator's CRD schemas (vendored in tests/data/crds), the
PrometheusRule against the shipped rules file and promtool, the image definition
with hadolint, and ``kubectl kustomize`` renders the base (hadolint and kubectl come
with the dev extra; a missing one fails, as every real component does).
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from acceptmon import settings as config_mod
from tests.conftest import ROOT
from tests.support.agentproc import AgentProcess
from tests.support.tools import free_port, require_tool
from tests.support.wait import wait_for

DEPLOY = ROOT / "deploy"
KUBE = DEPLOY / "kubernetes"
RULES = DEPLOY / "prometheus" / "acceptmon.rules.yml"
DOCKERFILE = DEPLOY / "container" / "Dockerfile"
IMAGE_SETTINGS = DEPLOY / "container" / "acceptmon.yaml"
CRDS = ROOT / "tests" / "data" / "crds"
CRD_SCHEMAS = {
    "ServiceMonitor": CRDS / "servicemonitors.v1.json",
    "PrometheusRule": CRDS / "prometheusrules.v1.json",
}
#: An older Kubernetes release the manifests still target, and the newest the installed
#: kubernetes-validate knows: every field must exist in both.
KUBE_VERSIONS = ("1.31.0", kubernetes_validate.latest_version())


def _yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


def kustomization() -> dict[str, Any]:
    data: dict[str, Any] = _yaml(KUBE / "kustomization.yaml")
    return data


def generated_configmaps() -> list[dict[str, Any]]:
    """The configMapGenerator's ConfigMaps as kustomize builds them (without the hash suffix)."""
    return [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": gen["name"]},
            "data": {Path(f).name: (KUBE / f).read_text() for f in gen["files"]},
        }
        for gen in kustomization().get("configMapGenerator", [])
    ]


def documents() -> list[dict[str, Any]]:
    """Every object the base holds, read from its files: a rendering without kustomize."""
    docs = [d for f in kustomization()["resources"] for d in yaml.safe_load_all((KUBE / f).read_text()) if d]
    return docs + generated_configmaps()


def by_kind(docs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (found,) = [d for d in docs if d["kind"] == kind]
    return found


def test_kustomization_lists_every_manifest() -> None:
    k = kustomization()
    listed = set(k["resources"]) | {f for g in k.get("configMapGenerator", []) for f in g["files"]}
    on_disk = {p.name for p in KUBE.glob("*.yaml")} - {"kustomization.yaml"}
    assert listed == on_disk


def _validate(doc: dict[str, Any], version: str) -> None:
    if doc["kind"] in CRD_SCHEMAS:
        validate_custom_resource(doc)
    else:
        kubernetes_validate.validate(doc, version, strict=True)


@pytest.mark.parametrize("version", KUBE_VERSIONS)
def test_manifests_validate_against_the_kubernetes_schemas(version: str) -> None:
    docs = documents()
    kinds = {d["kind"] for d in docs}
    assert kinds >= {"DaemonSet", "Service", "ConfigMap", "ServiceMonitor", "PrometheusRule"}
    for doc in docs:
        _validate(doc, version)


def strict(schema: Any) -> Any:
    """The CRD schema with unknown fields refused, as the API server's strict field validation does."""
    if isinstance(schema, list):
        return [strict(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: strict(v) for k, v in schema.items()}
    open_ended = "additionalProperties" in out or out.get("x-kubernetes-preserve-unknown-fields")
    if "properties" in out and not open_ended:
        out["additionalProperties"] = False
    return out


def validate_custom_resource(doc: dict[str, Any]) -> None:
    schema = strict(json.loads(CRD_SCHEMAS[doc["kind"]].read_text()))
    # The API server checks metadata itself; the CRD schema says only `type: object`.
    assert doc["apiVersion"] == "monitoring.coreos.com/v1" and doc["metadata"]["name"]
    # Not jsonschema.validate: it checks the schema first, and the CRDs' Go patterns (`^(?i)...`)
    # are not Python regexes. A pattern is only compiled for a field that is present.
    jsonschema.Draft7Validator(schema).validate(doc)


def test_validators_refuse_a_misspelt_field() -> None:
    """Both validators fail on an unknown field: the checks above are not vacuous."""
    docs = documents()
    daemonset = copy.deepcopy(by_kind(docs, "DaemonSet"))
    daemonset["spec"]["template"]["spec"]["containers"][0]["securityContext"]["readOnlyRootFileSystem"] = True
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(daemonset, KUBE_VERSIONS[-1], strict=True)
    monitor = copy.deepcopy(by_kind(docs, "ServiceMonitor"))
    monitor["spec"]["endpoints"][0]["honourLabels"] = True
    with pytest.raises(jsonschema.ValidationError):
        validate_custom_resource(monitor)
    rule = copy.deepcopy(by_kind(docs, "PrometheusRule"))
    rule["spec"]["groups"][0]["rules"][0]["for"] = 5  # a number where a duration string belongs
    with pytest.raises(jsonschema.ValidationError):
        validate_custom_resource(rule)


def test_kubectl_kustomize_renders_a_valid_base() -> None:
    done = subprocess.run(
        [require_tool("kubectl"), "kustomize", str(KUBE)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    docs = [d for d in yaml.safe_load_all(done.stdout) if d]
    for doc in docs:
        _validate(doc, KUBE_VERSIONS[-1])
        assert doc["kind"] == "Namespace" or doc["metadata"]["namespace"] == kustomization()["namespace"]
    settings = by_kind(docs, "ConfigMap")
    assert re.fullmatch(r"acceptmon-settings-[a-z0-9]{10}", settings["metadata"]["name"])  # content hash
    pod = by_kind(docs, "DaemonSet")["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["settings"]["configMap"]["name"] == settings["metadata"]["name"]
    (image,) = kustomization()["images"]
    assert pod["containers"][0]["image"] == f"{image['newName']}:{image['newTag']}"
    assert settings["data"] == generated_configmaps()[0]["data"]


# --- the DaemonSet ---------------------------------------------------------------------


def agent_pod() -> dict[str, Any]:
    pod: dict[str, Any] = by_kind(documents(), "DaemonSet")["spec"]["template"]["spec"]
    return pod


def test_daemonset_reads_pod_logs_read_only_and_writes_only_its_state_volume() -> None:
    pod = agent_pod()
    (container,) = pod["containers"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    logs = mounts["/var/log/pods"]
    assert logs["readOnly"] is True and volumes[logs["name"]]["hostPath"]["path"] == "/var/log/pods"
    assert mounts["/etc/acceptmon"]["readOnly"] is True
    writable = {path for path, m in mounts.items() if not m.get("readOnly")}
    assert writable == {"/var/lib/acceptmon"}
    settings = _yaml(KUBE / "acceptmon.yaml")
    assert Path(settings["state_dir"]).is_relative_to("/var/lib/acceptmon")
    assert container["args"] == ["run", "--config", "/etc/acceptmon/acceptmon.yaml"]


def test_daemonset_runs_locked_down() -> None:
    pod = agent_pod()
    (container,) = pod["containers"]
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] != 0
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert pod["automountServiceAccountToken"] is False
    sc = container["securityContext"]
    assert sc["readOnlyRootFilesystem"] is True and sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"] == {"drop": ["ALL"]} and sc["runAsNonRoot"] is True
    assert sc["seccompProfile"] == {"type": "RuntimeDefault"}
    res = container["resources"]
    assert set(res["requests"]) == set(res["limits"]) == {"cpu", "memory"}
    assert pod["terminationGracePeriodSeconds"] > 5, "SIGTERM checkpointing takes up to 5 s"
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        assert container[probe]["httpGet"] == {"path": "/healthz", "port": "http"}, probe


def test_service_and_monitor_point_at_the_agents_port() -> None:
    docs = documents()
    pod = agent_pod()
    (port,) = pod["containers"][0]["ports"]
    settings = _yaml(KUBE / "acceptmon.yaml")
    assert settings["listen"] == f"0.0.0.0:{port['containerPort']}"
    pod_labels = by_kind(docs, "DaemonSet")["spec"]["template"]["metadata"]["labels"]
    service = by_kind(docs, "Service")
    assert service["spec"]["selector"].items() <= pod_labels.items()
    assert [p["targetPort"] for p in service["spec"]["ports"]] == [port["name"]]
    monitor = by_kind(docs, "ServiceMonitor")
    labels = kustomization()["labels"][0]["pairs"] | service["metadata"].get("labels", {})
    assert monitor["spec"]["selector"]["matchLabels"].items() <= labels.items()
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] == service["spec"]["ports"][0]["name"] and endpoint["path"] == "/metrics"


@pytest.mark.parametrize("path", [KUBE / "acceptmon.yaml", IMAGE_SETTINGS], ids=lambda p: p.parent.name)
def test_shipped_settings_load(path: Path) -> None:
    cfg = config_mod.load(str(path))
    assert cfg.sources and cfg.listen_addr() == ("0.0.0.0", 9469)
    assert cfg.state_dir == "/var/lib/acceptmon/state"


def test_agent_runs_with_the_configmap_settings_on_a_kubelet_tree(tmp_path: Path) -> None:
    """The ConfigMap's settings, paths moved into tmp: the kubernetes: source finds a container
    log in kubelet's layout, and the agent makes its state directory inside a world-writable volume
    root (an emptyDir's mode) and keeps it private."""
    log = tmp_path / "pods" / "inference_sglang-0_0f1e2d3c-4b5a-4697-8877-665544332211" / "sglang" / "0.log"
    log.parent.mkdir(parents=True)
    log.write_text("".join(f"not a record {i}\n" for i in range(5)))
    volume = tmp_path / "volume"
    volume.mkdir(mode=0o777)
    volume.chmod(0o777)
    port = free_port()
    text = (KUBE / "acceptmon.yaml").read_text()
    text = text.replace("/var/log/pods", str(tmp_path / "pods")).replace("/var/lib/acceptmon", str(volume))
    settings = tmp_path / "acceptmon.yaml"
    settings.write_text(text.replace('"0.0.0.0:9469"', f'"127.0.0.1:{port}"'))
    state = volume / "state"
    agent = AgentProcess(state, ["--config", str(settings)], port=port, listen_flag=False)
    try:
        wait_for(lambda: (agent.metric("acceptmon_lines_total") or 0) == 5, 20, "the 5 lines of 0.log")
        assert stat.S_IMODE(state.stat().st_mode) == 0o700
    finally:
        assert agent.stop() == 0, agent.stderr()
    assert any(state.iterdir()), "no checkpoint in the state directory"


# --- the PrometheusRule: the shipped rules file, verbatim ---------------------------------


def test_prometheusrule_groups_equal_the_rules_file() -> None:
    rule = by_kind(documents(), "PrometheusRule")
    assert rule["spec"]["groups"] == _yaml(RULES)["groups"]
    done = subprocess.run(
        [sys.executable, str(KUBE / "gen_prometheusrule.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def test_generator_notices_a_stale_prometheusrule(tmp_path: Path) -> None:
    for rel in (
        "kubernetes/gen_prometheusrule.py",
        "kubernetes/prometheusrule.yaml",
        "prometheus/acceptmon.rules.yml",
    ):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(DEPLOY / rel, tmp_path / rel)
    rules = tmp_path / "prometheus" / "acceptmon.rules.yml"
    rules.write_text(rules.read_text().replace("for: 5m", "for: 7m", 1))
    script = [sys.executable, str(tmp_path / "kubernetes" / "gen_prometheusrule.py")]
    stale = subprocess.run([*script, "--check"], capture_output=True, text=True, check=False)
    assert stale.returncode == 1 and "stale" in stale.stderr
    subprocess.run(script, check=True)
    fresh = yaml.safe_load((tmp_path / "kubernetes" / "prometheusrule.yaml").read_text())
    assert fresh["spec"]["groups"] == yaml.safe_load(rules.read_text())["groups"]


def test_promtool_checks_the_prometheusrule_groups(tmp_path: Path) -> None:
    groups = by_kind(documents(), "PrometheusRule")["spec"]["groups"]
    extracted = tmp_path / "groups.yml"
    extracted.write_text(yaml.safe_dump({"groups": groups}))
    done = subprocess.run(
        [require_tool("promtool"), "check", "rules", str(extracted)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {sum(len(g['rules']) for g in groups)} rules found" in done.stdout


# --- the image definition -------------------------------------------------------------------


def run_hadolint(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [require_tool("hadolint"), "--no-color", str(path)], capture_output=True, text=True, check=False
    )


def test_hadolint_passes_the_image_definition() -> None:
    done = run_hadolint(DOCKERFILE)
    assert done.returncode == 0, done.stdout + done.stderr


def test_hadolint_flags_an_unpinned_base(tmp_path: Path) -> None:
    bad = tmp_path / "Dockerfile"
    bad.write_text(re.sub(r"^FROM python:\S+", "FROM python:latest", DOCKERFILE.read_text(), flags=re.M))
    done = run_hadolint(bad)
    assert done.returncode != 0 and "DL3007" in done.stdout


def instructions() -> Iterator[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    text = re.sub(
        r"\\\n",
        " ",
        "\n".join(line for line in DOCKERFILE.read_text().splitlines() if not line.lstrip().startswith("#")),
    )
    for line in text.splitlines():
        if line.strip():
            word, _, rest = line.strip().partition(" ")
            yield word.upper(), rest.strip()


def test_image_is_slim_non_root_and_read_only_ready() -> None:
    steps = list(instructions())
    bases = [args.split()[0] for word, args in steps if word == "FROM"]
    assert all(re.fullmatch(r"python:\d+\.\d+\.\d+-slim-\w+", b) for b in bases), bases
    runs = " ".join(args for word, args in steps if word == "RUN")
    assert "pip install" in runs and "[" not in runs.split("pip install", 1)[1], "install without extras"
    assert not re.search(r"pandas|matplotlib|scipy", runs)
    (user,) = [args for word, args in steps if word == "USER"]
    assert re.fullmatch(r"[1-9]\d*:[1-9]\d*", user), "a numeric non-root user, for runAsNonRoot"
    assert str(agent_pod()["securityContext"]["runAsUser"]) == user.split(":")[0]
    (health,) = [args for word, args in steps if word == "HEALTHCHECK"]
    assert "/healthz" in health
    assert ("VOLUME", '["/var/lib/acceptmon"]') in steps
    assert any(word == "ENV" and "PYTHONDONTWRITEBYTECODE=1" in args for word, args in steps)
    (cmd,) = [json.loads(args) for word, args in steps if word == "CMD"]
    assert cmd == ["run", "--config", "/etc/acceptmon/acceptmon.yaml"]
