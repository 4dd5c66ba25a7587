"""The deploy artefacts against the real tools: promtool, systemd-analyze, and a
real Prometheus scraping a real agent and evaluating the shipped rules.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from acceptmon.testing import synth
from tests.conftest import ROOT
from tests.support.peer_rules import extra_rule_files
from tests.support.procs import Proc, run_prometheus, start_process
from tests.support.sshd import free_port
from tests.support.tools import require_tool
from tests.support.wait import wait_for

PROM_DIR = ROOT / "deploy" / "prometheus"
RULES = PROM_DIR / "acceptmon.rules.yml"
UNIT = ROOT / "deploy" / "acceptmon.service"
DASHBOARD = ROOT / "dashboards" / "acceptmon.json"
#: What the dashboard's variables expand to when every value is selected.
GRAFANA_VARS = {"$instance": ".*", "$source": ".*", "$__rate_interval": "1m", "$__range": "1h"}


def promtool(*args: str, cwd: Path = PROM_DIR) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [require_tool("promtool"), *args], cwd=cwd, capture_output=True, text=True, check=False
    )


def test_promtool_checks_the_rules() -> None:
    done = promtool("check", "rules", RULES.name)
    count = sum(len(g["rules"]) for g in yaml.safe_load(RULES.read_text())["groups"])
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {count} rules found" in done.stdout


def test_promtool_rule_unit_tests_pass() -> None:
    done = promtool("test", "rules", "acceptmon.rules.test.yml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


def test_rule_unit_tests_catch_a_changed_threshold(tmp_path: Path) -> None:
    shutil.copy(PROM_DIR / "acceptmon.rules.test.yml", tmp_path)
    rules = RULES.read_text()
    assert "acceptmon:parse_error_ratio:rate15m > 0.05" in rules
    (tmp_path / RULES.name).write_text(rules.replace("rate15m > 0.05", "rate15m > 0.5"))
    done = promtool("test", "rules", "acceptmon.rules.test.yml", cwd=tmp_path)
    assert done.returncode != 0 and "ParseErrorsHigh" in done.stdout + done.stderr


def test_promtool_checks_the_scrape_config() -> None:
    done = promtool("check", "config", "prometheus.yml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS: 1 rule files found" in done.stdout


def _unit_with_real_binary(tmp_path: Path) -> Path:
    binary = Path(sys.executable).with_name("acceptmon")
    assert binary.exists(), f"{binary} missing: run the tests from the project's venv"
    unit = tmp_path / "acceptmon.service"
    unit.write_text(UNIT.read_text().replace("/opt/acceptmon/bin/acceptmon", str(binary)))
    return unit


def test_systemd_verifies_the_unit(tmp_path: Path) -> None:
    tool = require_tool("systemd-analyze")
    unit = _unit_with_real_binary(tmp_path)
    done = subprocess.run([tool, "verify", str(unit)], capture_output=True, text=True, check=False)
    assert done.returncode == 0 and not done.stderr.strip(), done.stderr


def test_systemd_rates_the_unit_hardened(tmp_path: Path) -> None:
    tool = require_tool("systemd-analyze")
    unit = _unit_with_real_binary(tmp_path)
    done = subprocess.run(
        [tool, "security", "--offline=yes", str(unit)], capture_output=True, text=True, check=False
    )
    match = re.search(r"Overall exposure level for acceptmon\.service: ([\d.]+)", done.stdout)
    assert match, done.stdout + done.stderr
    assert float(match.group(1)) <= 2.0, done.stdout


# --- a real Prometheus scraping a real agent -----------------------------------------


START = datetime.now().replace(microsecond=0) - timedelta(minutes=10)


def decode_lines(first: int, count: int) -> list[str]:
    return [
        synth.decode_line(START + timedelta(seconds=60 + 2 * i), 2.5) for i in range(first, first + count)
    ]


@pytest.fixture
def agent(tmp_path: Path) -> Iterator[Proc]:
    """The agent following a log that holds a server start and 10 Decode lines."""
    log = tmp_path / "server.log"
    log.write_text("\n".join(synth.startup(START, seed=1) + decode_lines(0, 10)) + "\n")
    port = free_port()
    args = [sys.executable, "-m", "acceptmon", "run", "--listen", f"127.0.0.1:{port}"]
    args += ["--state-dir", str(tmp_path / "state"), str(log)]
    yield from start_process(args, tmp_path / "agent.out", f"http://127.0.0.1:{port}", "/healthz")


def _prometheus(tmp_path: Path, target: str) -> Iterator[Proc]:
    """Prometheus with the shipped rules and the shipped job pointed at ``target``, 1 s cycles."""
    shipped = yaml.safe_load((PROM_DIR / "prometheus.yml").read_text())
    job = next(j for j in shipped["scrape_configs"] if j["job_name"] == "acceptmon")
    job.pop("file_sd_configs", None)
    job.update(scrape_interval="1s", scrape_timeout="1s", static_configs=[{"targets": [target]}])
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(RULES), *map(str, extra_rule_files())],
        "scrape_configs": [job],
    }
    yield from run_prometheus(tmp_path, config)


@pytest.fixture
def prometheus(tmp_path: Path, agent: Proc) -> Iterator[Proc]:
    yield from _prometheus(tmp_path, agent.url.removeprefix("http://"))


@pytest.fixture
def idle_prometheus(tmp_path: Path) -> Iterator[Proc]:
    """Scraping a port nobody listens on: enough to run queries."""
    yield from _prometheus(tmp_path, f"127.0.0.1:{free_port()}")


def api(prom: Proc, path: str, **params: str) -> Any:
    url = f"{prom.url}/api/v1/{path}?{urllib.parse.urlencode(params)}"
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            body = json.load(resp)
    except urllib.error.HTTPError as exc:
        body = json.load(exc)
    assert body["status"] == "success", f"{params}: {body.get('error')}"
    return body["data"]


def values(prom: Proc, expr: str) -> dict[str, float]:
    """``{source: value}`` of an instant query."""
    return {
        r["metric"].get("source", ""): float(r["value"][1]) for r in api(prom, "query", query=expr)["result"]
    }


def test_prometheus_scrapes_the_agent_and_evaluates_the_rules(
    tmp_path: Path, agent: Proc, prometheus: Proc
) -> None:
    source = str(tmp_path / "server.log")
    _feed_until_rated(prometheus, source)
    _check_acceptance(prometheus, source)
    _check_rules_and_panels(prometheus)
    _check_restart_is_annotated(prometheus, source)
    assert agent.stop() == 0, agent.output()  # SIGTERM: checkpoint and exit, well within the unit's 15 s
    assert list((tmp_path / "state").iterdir()), "no checkpoint written"


def _feed_until_rated(prom: Proc, source: str) -> None:
    """Two batches of Decode lines, so the counters have a rate."""

    def batches_are(n: float) -> bool:
        return values(prom, "acceptmon_decode_batches_total") == {source: n}

    wait_for(lambda: batches_are(10), 30, "the first 10 Decode lines in Prometheus", interval=0.2)
    with open(source, "a") as log:
        log.write("\n".join(decode_lines(10, 15)) + "\n")
    wait_for(lambda: batches_are(25), 30, "all 25 Decode lines in Prometheus", interval=0.2)
    wait_for(
        lambda: bool(values(prom, "acceptmon:accept_rate:rate5m")), 30, "the recording rule", interval=0.2
    )


def _check_acceptance(prom: Proc, source: str) -> None:
    # synth lines: accept len 2.5 with 4 draft slots, so 1.5 of 3 draft tokens accepted.
    assert values(prom, "acceptmon:accept_rate:rate5m")[source] == pytest.approx(0.5)
    assert values(prom, "acceptmon:accept_length:rate5m")[source] == pytest.approx(2.5)
    (by_model,) = api(prom, "query", query="acceptmon:accept_rate_by_model:rate5m")["result"]
    assert by_model["metric"]["model"] == "Qwen/Qwen3-32B"  # the join with run_info matched
    assert float(by_model["value"][1]) == pytest.approx(0.5)
    info = _run_info(prom)
    assert info["job"] == "acceptmon" and info["host"] == "127.0.0.1"  # the shipped relabelling
    assert info["algorithm"] == "EAGLE3" and info["config_hash"]


def _check_rules_and_panels(prom: Proc) -> None:
    wait_for(lambda: _rule_health(prom) == {"ok"}, 30, "every rule evaluated", interval=0.2)
    assert _rule_health(prom) == {"ok"}, _rule_errors(prom)
    answered = {t for t, expr in dashboard_queries().items() if api(prom, "query", query=expr)["result"]}
    for panel in ("Accept rate (token-weighted, 5m)", "Accept length", "Current run settings", "Source lag"):
        assert any(t.startswith(panel + " #") for t in answered), f"dashboard panel {panel!r} shows no data"


def _check_restart_is_annotated(prom: Proc, source: str) -> None:
    """A restart with new settings: the dashboard's annotation names the new config hash."""
    old = _run_info(prom)["config_hash"]
    with open(source, "a") as log:
        log.write(
            "\n".join(synth.startup(START + timedelta(minutes=5), seed=2, speculative_num_steps=5)) + "\n"
        )
    (restarts,) = [q for t, q in dashboard_queries().items() if t.startswith("Server restarts #")]

    def hashes() -> list[str]:
        return [r["metric"]["config_hash"] for r in api(prom, "query", query=restarts)["result"]]

    wait_for(lambda: hashes() not in ([], [old]), 30, "the restart annotation", interval=0.2)
    info = _run_info(prom)
    assert hashes() == [info["config_hash"]] and info["config_hash"] != old
    assert info["num_steps"] == "5"


def _run_info(prom: Proc) -> dict[str, str]:
    (row,) = api(prom, "query", query="acceptmon_run_info")["result"]
    labels: dict[str, str] = row["metric"]
    return labels


def _rules(prom: Proc) -> list[dict[str, Any]]:
    return [r for g in api(prom, "rules")["groups"] for r in g["rules"]]


def _rule_health(prom: Proc) -> set[str]:
    return {r["health"] for r in _rules(prom)}


def _rule_errors(prom: Proc) -> list[str]:
    return [f"{r['name']}: {r.get('lastError')}" for r in _rules(prom) if r["health"] != "ok"]


def dashboard_queries() -> dict[str, str]:
    """``{panel title: PromQL}`` with Grafana's variables expanded as for "All"."""
    dash = json.loads(DASHBOARD.read_text())
    panels = [p for top in dash["panels"] for p in [top, *top.get("panels", [])]]
    named = [(p["title"], t["expr"]) for p in panels for t in p.get("targets", [])]
    named += [(a["name"], a["expr"]) for a in dash["annotations"]["list"] if "expr" in a]
    out = {}
    for i, (title, template) in enumerate(named):
        expr = template
        for var, value in GRAFANA_VARS.items():
            expr = expr.replace(var, value)
        assert "$" not in expr, f"{title}: unexpanded variable in {expr}"
        out[f"{title} #{i}"] = expr
    return out


def test_every_dashboard_query_runs_in_prometheus(idle_prometheus: Proc) -> None:
    queries = dashboard_queries()
    assert len(queries) > 10
    for expr in queries.values():
        api(idle_prometheus, "query", query=expr)  # asserts status == success
