"""Dashboards, rules, examples and the unit agree with the code they describe.

A renamed metric or label, a new detector rule without an alert, or an example
config the loader rejects fails here, before an SRE finds an empty panel.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from acceptmon import settings as config_mod
from acceptmon.detect import findings
from acceptmon.metrics.collect import CATALOGUE, exposed_names
from acceptmon.notify import OUTCOMES
from tests.conftest import ROOT
from tests.support.peer_rules import extra_records

DEPLOY = ROOT / "deploy"
RULES = DEPLOY / "prometheus" / "acceptmon.rules.yml"
RULE_TESTS = DEPLOY / "prometheus" / "acceptmon.rules.test.yml"
DASHBOARD = ROOT / "dashboards" / "acceptmon.json"
UNIT = DEPLOY / "acceptmon.service"

#: Labels Prometheus adds to every target (`host` by the example's relabelling).
TARGET_LABELS = {"job", "instance", "host", "le"}
PROMETHEUS_BUILTINS = {"up"}
DETECTOR_RULES = {findings.DROP, findings.COLLAPSED, findings.FLOOR, findings.DRIFT, findings.STALLED}
CRITICAL_RULES = {findings.DROP, findings.COLLAPSED}  # the detector's own severities

_SELECTOR_NAME = re.compile(r"([A-Za-z_:][\w:]*)\s*\{")
_OUR_NAME = re.compile(r"(?<![\w:])(acceptmon[_:][\w:]*)")
_MATCHER_LABEL = re.compile(r"([A-Za-z_]\w*)\s*(?:=~|!~|!=|=)\s*\"")
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)")
_PROM_TEMPLATE_LABEL = re.compile(r"(?:\$labels|\.Labels)\.(\w+)")
_GRAFANA_TEMPLATE_LABEL = re.compile(r"\{\{\s*(\w+)\s*\}\}")
_PRINTF_QUERY = re.compile(r'printf\s+"((?:[^"\\]|\\.)*)"')


def _yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


def rules() -> list[dict[str, Any]]:
    return [r for g in _yaml(RULES)["groups"] for r in g["rules"]]


def alerts() -> list[dict[str, Any]]:
    return [r for r in rules() if "alert" in r]


def recorded() -> set[str]:
    return {r["record"] for r in rules() if "record" in r}


def dashboard() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return data


def _panels(dash: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for panel in dash["panels"]:
        yield panel
        yield from panel.get("panels", [])


def dashboard_exprs(dash: dict[str, Any]) -> list[str]:
    exprs = [t["expr"] for p in _panels(dash) for t in p.get("targets", [])]
    exprs += [a["expr"] for a in dash["annotations"]["list"] if "expr" in a]
    for var in dash["templating"]["list"]:
        if var["type"] == "query":
            exprs.append(var["query"]["query"] if isinstance(var["query"], dict) else var["query"])
    return exprs


def rule_exprs() -> list[str]:
    """Rule expressions, queries inside annotation templates, and the rule tests' series."""
    exprs = [r["expr"] for r in rules()]
    for alert in alerts():
        for text in alert["annotations"].values():
            exprs += [q.replace("%q", '"x"') for q in _PRINTF_QUERY.findall(text)]
    for case in _yaml(RULE_TESTS)["tests"]:
        exprs += [s["series"] for s in case.get("input_series", [])]
        exprs += [t["expr"] for t in case.get("promql_expr_test", [])]
    return exprs


def metric_names(expr: str) -> set[str]:
    bare = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    return set(_SELECTOR_NAME.findall(bare)) | set(_OUR_NAME.findall(bare))


def label_names(expr: str) -> set[str]:
    grouped = {name.strip() for group in _GROUPING.findall(expr) for name in group.split(",")}
    return (set(_MATCHER_LABEL.findall(expr)) | grouped) - {""}


def known_labels() -> set[str]:
    return {label for m in CATALOGUE for label in m.labels} | TARGET_LABELS


ALL_EXPRS = [("rules", e) for e in rule_exprs()] + [("dashboard", e) for e in dashboard_exprs(dashboard())]


@pytest.mark.parametrize(("where", "expr"), ALL_EXPRS, ids=[f"{w}-{i}" for i, (w, _) in enumerate(ALL_EXPRS)])
def test_expression_uses_known_metrics_and_labels(where: str, expr: str) -> None:
    names = metric_names(expr)
    assert names, f"{where}: no metric in {expr!r}"
    unknown = names - exposed_names() - recorded() - extra_records() - PROMETHEUS_BUILTINS
    assert not unknown, f"{where}: {sorted(unknown)} not in acceptmon.metrics.collect nor recorded: {expr}"
    assert label_names(expr) <= known_labels(), f"{where}: unknown label in {expr}"


def test_name_extraction_sees_what_it_must() -> None:
    expr = 'sum by (model) (rate(acceptmon_x_total{rule="acceptmon_not_a_metric"}[5m])) / up{job="a"}'
    assert metric_names(expr) == {"acceptmon_x_total", "up"}
    assert label_names(expr) == {"model", "rule", "job"}


def test_templates_name_only_known_labels() -> None:
    notes = [v for a in alerts() for v in a["annotations"].values()]
    dash = dashboard()
    texts = [t.get("legendFormat", "") for p in _panels(dash) for t in p.get("targets", [])]
    texts += [a.get(k, "") for a in dash["annotations"]["list"] for k in ("titleFormat", "textFormat")]
    used = {m for text in notes for m in _PROM_TEMPLATE_LABEL.findall(text)}
    used |= {m for text in texts for m in _GRAFANA_TEMPLATE_LABEL.findall(text)}
    tag_keys = {k for a in dash["annotations"]["list"] for k in a.get("tagKeys", "").split(",") if k}
    assert used and tag_keys
    assert (used | tag_keys) - {"__auto"} <= known_labels()


def test_every_detector_rule_has_an_alert_with_its_severity() -> None:
    routed: dict[str, str] = {}
    for alert in alerts():
        match = re.search(r'rule="(\w+)"', alert["expr"])
        if match and "acceptmon_finding_active" in alert["expr"]:
            routed[match.group(1)] = alert["labels"]["severity"]
    assert set(routed) == DETECTOR_RULES
    assert {r for r, sev in routed.items() if sev == "critical"} == CRITICAL_RULES


def test_notification_outcomes_in_rules_exist() -> None:
    used = {
        o for r in rules() for group in re.findall(r'outcome=~"([^"]+)"', r["expr"]) for o in group.split("|")
    }
    assert used and used <= set(OUTCOMES)


def _anchor(heading: str) -> str:
    return re.sub(r"[^\w-]", "", heading.strip().lower().replace(" ", "-"))


def test_alerts_carry_severity_text_and_a_runbook_that_exists() -> None:
    readme = (DEPLOY / "README.md").read_text()
    anchors = {_anchor(h) for h in re.findall(r"^#+ (.+)$", readme, flags=re.M)}
    for alert in alerts():
        name = alert["alert"]
        assert alert["labels"]["severity"] in {"critical", "warning"}, name
        notes = alert["annotations"]
        assert notes["summary"] and notes["description"], name
        assert notes["runbook_url"].rsplit("#", 1)[1] in anchors, f"{name}: runbook anchor missing in README"


def test_every_alert_has_firing_and_quiet_cases_and_every_record_is_checked() -> None:
    firing: set[str] = set()
    quiet: set[str] = set()
    checked: set[str] = set()
    for case in _yaml(RULE_TESTS)["tests"]:
        for t in case.get("alert_rule_test", []):
            (firing if t["exp_alerts"] else quiet).add(t["alertname"])
        checked |= {t["expr"] for t in case.get("promql_expr_test", []) if t["exp_samples"]}
    names = {a["alert"] for a in alerts()}
    assert names <= firing, f"no firing case: {sorted(names - firing)}"
    assert names <= quiet, f"no quiet case: {sorted(names - quiet)}"
    assert recorded() <= checked, f"recording rules without a value check: {sorted(recorded() - checked)}"


def test_dashboard_is_grafana_shaped_and_templated_by_source() -> None:
    dash = dashboard()
    assert dash["uid"] == "acceptmon" and dash["schemaVersion"] >= 39 and dash["title"]
    variables = {v["name"]: v for v in dash["templating"]["list"]}
    source = variables["source"]["query"]
    assert re.fullmatch(r"label_values\(acceptmon_run_info(\{.*\})?, source\)", source["query"])
    assert variables["datasource"]["query"] == "prometheus"
    panels = list(_panels(dash))
    ids = [p["id"] for p in panels]
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    for p in panels:
        pos = p["gridPos"]
        assert pos["x"] + pos["w"] <= 24 and pos["h"] > 0, p["title"]
        for t in p.get("targets", []):
            assert t["datasource"]["uid"] == "${datasource}", p["title"]
    _assert_no_overlap(panels)
    exprs = dashboard_exprs(dash)
    assert any(name in e for e in exprs for name in recorded()), "panels should use the recording rules"
    notes = [a for a in dash["annotations"]["list"] if "expr" in a]
    assert notes and all("config_hash" in a["tagKeys"] for a in notes)


def _assert_no_overlap(panels: list[dict[str, Any]]) -> None:
    cells: dict[tuple[int, int], str] = {}
    for p in panels:
        g = p["gridPos"]
        for x in range(g["x"], g["x"] + g["w"]):
            for y in range(g["y"], g["y"] + g["h"]):
                assert (x, y) not in cells, f"{p['title']!r} overlaps {cells[(x, y)]!r}"
                cells[(x, y)] = p["title"]


#: Files the example's SSH source names; the loader wants them to exist, so the test makes them.
SSH_FILES = (
    "/etc/acceptmon/ssh/id_ed25519",
    "/var/lib/acceptmon/.ssh/known_hosts",
    "/etc/acceptmon/ssh/config",
)


@pytest.mark.parametrize("path", sorted(DEPLOY.glob("*.yaml")), ids=lambda p: p.name)
def test_example_config_loads(path: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ACCEPTMON_SLACK_WEBHOOK", "https://hooks.slack.com/services/T000/B000/example")
    text = path.read_text()
    for name in SSH_FILES:
        made = tmp_path / name.lstrip("/")
        made.parent.mkdir(parents=True, exist_ok=True)
        made.write_text("")
        text = text.replace(name, str(made))
    copy = tmp_path / path.name
    copy.write_text(text)
    cfg = config_mod.load(str(copy))
    assert cfg.sources and cfg.listen_addr()[1] == 9469
    assert cfg.state_dir == config_mod.DEFAULT_STATE_DIR  # the unit's StateDirectory


def test_example_config_notify_needs_no_secret_in_the_file() -> None:
    text = (DEPLOY / "acceptmon.example.yaml").read_text()
    assert "hooks.slack.com/services" not in text
    assert _yaml(DEPLOY / "acceptmon.example.yaml")["notify"]["slack"]["webhook_url_env"]


def unit_entries() -> list[tuple[str, str, str]]:
    """(section, key, value) in order; systemd allows repeated keys, configparser does not."""
    section, out = "", []
    for raw in UNIT.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line.strip("[]")
            continue
        key, _, value = line.partition("=")
        out.append((section, key.strip(), value.strip()))
    return out


def test_unit_is_hardened() -> None:
    service: dict[str, list[str]] = {}
    for section, key, value in unit_entries():
        if section == "Service":
            service.setdefault(key, []).append(value)
    expect = {
        "ProtectSystem": "strict",
        "ProtectHome": "read-only",
        "PrivateTmp": "yes",
        "NoNewPrivileges": "yes",
        "ProtectKernelTunables": "yes",
        "ProtectKernelModules": "yes",
        "ProtectKernelLogs": "yes",
        "RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX",
        "StateDirectory": "acceptmon",
        "Restart": "on-failure",
        "EnvironmentFile": "-/etc/acceptmon/secrets.env",
        "CapabilityBoundingSet": "",
    }
    for key, value in expect.items():
        assert value in service.get(key, []), f"{key}={value} missing"
    assert "@system-service" in service["SystemCallFilter"]
    assert "/var/log" in service["ReadOnlyPaths"]
    assert service.get("User") == ["acceptmon"] or service.get("DynamicUser") == ["yes"]
    assert service["ExecReload"][-1] == "/bin/kill -HUP $MAINPID"
    assert service["ExecStart"][0].endswith("run --config /etc/acceptmon/acceptmon.yaml")
    assert service["MemoryMax"] and service["SupplementaryGroups"]
    stop = int(service["TimeoutStopSec"][0].rstrip("s"))
    assert stop > 5, "SIGTERM checkpointing takes up to 5 s"
    assert "/var/lib/" + service["StateDirectory"][0] == config_mod.DEFAULT_STATE_DIR
