"""A real Prometheus keeps scraping the agent while unauthenticated clients flood it (issue 19, item 6).

The agent serves HTTPS with bcrypt basic auth (cost 10, ~60 ms a check);
Prometheus scrapes it every second with the right password. For FLOOD_SECONDS
a separate process floods the same port over loopback, either with a new
wrong password on every request (no cache can help) or by hammering /healthz.
Before the fix every worker was taken and Prometheus's scrapes got 503; now
at least 95% of them must succeed, read from Prometheus's own ``up`` series.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import bcrypt
import pytest

from tests.support.certs import Certs, make_certs
from tests.support.wait import wait_for
from tests.system.test_web_security import Proc, job, prom_api, start_agent, start_prometheus, targets

ROOT = Path(__file__).resolve().parents[2]
FLOOD_SECONDS = 25
UP = 'up{job="acceptmon"}'


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture
def procs() -> Iterator[list[Proc]]:
    started: list[Proc] = []
    yield started
    for p in started:
        p.stop()


def _over(url: str, fn: str, at: float, seconds: int) -> float:
    result = prom_api(url, "query", query=f"{fn}({UP}[{seconds}s])", time=f"{at:.3f}")["result"]
    return float(result[0]["value"][1]) if result else 0.0


def _latest_scrape(url: str) -> float:
    result = prom_api(url, "query", query=f"timestamp({UP})")["result"]
    return float(result[0]["value"][1]) if result else 0.0


def flood(port: int, path: str, mode: str, connections: int, ca: Path) -> dict[str, int]:
    """Run the bounded flood process to its end; the responses it got, by status."""
    args = [sys.executable, "-m", "tests.support.flood", str(port), path, mode]
    proc = subprocess.Popen(
        [*args, str(connections), str(FLOOD_SECONDS), str(ca)], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    try:
        out, _ = proc.communicate(timeout=FLOOD_SECONDS + 30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, out
    counts: dict[str, int] = json.loads(out)
    return counts


@pytest.mark.parametrize(
    ("mode", "path", "connections"),
    [("wrong-password", "/metrics", 20), ("anonymous", "/healthz", 24)],
    ids=["wrong-passwords", "healthz"],
)
def test_prometheus_keeps_95_percent_of_scrapes_under_a_flood(
    tmp_path: Path, certs: Certs, procs: list[Proc], mode: str, path: str, connections: int
) -> None:
    hashed = bcrypt.hashpw(b"scrape-pw", bcrypt.gensalt(10)).decode()
    web = {
        "tls_server_config": {"cert_file": str(certs.server_cert), "key_file": str(certs.server_key)},
        "basic_auth_users": {"prometheus": hashed},
    }
    agent, port = start_agent(tmp_path, web)
    procs.append(agent)
    auth = {"username": "prometheus", "password": "scrape-pw"}
    prom, url = start_prometheus(
        tmp_path, [job("acceptmon", port, {"ca_file": str(certs.ca)}, basic_auth=auth)]
    )
    procs.append(prom)
    wait_for(lambda: targets(url).get("acceptmon", {}).get("health") == "up", 30, "target never up")

    began = time.time()
    counts = flood(port, path, mode, connections, certs.ca)
    end = began + FLOOD_SECONDS
    wait_for(lambda: _latest_scrape(url) > end + 1, 30, "no scrape recorded after the flood")

    scrapes = _over(url, "count_over_time", end, FLOOD_SECONDS)
    ok = _over(url, "sum_over_time", end, FLOOD_SECONDS)
    share = ok / scrapes if scrapes else 0.0
    print(f"\n{mode} flood ({connections} connections, {FLOOD_SECONDS} s): {counts}")
    print(f"Prometheus scrapes during the flood: {ok:.0f}/{scrapes:.0f} successful = {share:.1%}")
    if mode == "wrong-password":
        assert "200" not in counts, counts
    assert scrapes >= FLOOD_SECONDS * 0.8, f"Prometheus itself scraped only {scrapes:.0f} times"
    assert share >= 0.95, f"only {ok:.0f} of {scrapes:.0f} scrapes succeeded under the {mode} flood"
    assert sum(counts.values()) >= 10 * connections, f"the flood never got going: {counts}"
    assert agent.alive()
    assert "scrape-pw" not in agent.output() and "wrong-" not in agent.output()
