"""A real Prometheus scrapes the agent over HTTPS: basic auth, then client certificates.

The agent runs with ``--web.config.file`` (exporter-toolkit format); Prometheus
uses its ordinary ``scheme: https`` / ``basic_auth`` / ``tls_config``. A scrape
without credentials gets 401 and plain HTTP to the TLS port fails.
"""

from __future__ import annotations

import base64
import json
import ssl
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import bcrypt
import pytest
import yaml

from acceptmon.testing import synth
from tests.support.certs import Certs, make_certs
from tests.support.tools import free_port, require_tool
from tests.support.wait import wait_for

START = datetime.now().replace(microsecond=0) - timedelta(minutes=10)
DECODES = 12


class Proc:
    def __init__(self, args: list[str], log: Path) -> None:
        self.log = log
        with log.open("wb") as out:
            self.popen = subprocess.Popen(
                args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def alive(self) -> bool:
        assert self.popen.poll() is None, f"exited early:\n{self.output()}"
        return True

    def stop(self) -> int:
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(15)
            except subprocess.TimeoutExpired:
                self.popen.kill()
        return self.popen.wait()


def fetch(url: str, ctx: ssl.SSLContext | None = None, auth: str | None = None) -> tuple[int, dict[str, str]]:
    request = urllib.request.Request(url)
    if auth:
        request.add_header("Authorization", "Basic " + base64.b64encode(auth.encode()).decode())
    try:
        with urllib.request.urlopen(request, timeout=5, context=ctx) as resp:
            return resp.status, dict(resp.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers)


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"))


def start_agent(tmp_path: Path, web: dict[str, Any]) -> tuple[Proc, int]:
    log = tmp_path / "server.log"
    lines = synth.startup(START, seed=1)
    lines += [synth.decode_line(START + timedelta(seconds=60 + 2 * i), 2.5) for i in range(DECODES)]
    log.write_text("\n".join(lines) + "\n")
    (tmp_path / "web.yml").write_text(yaml.safe_dump(web))
    port = free_port()
    args = [sys.executable, "-m", "acceptmon", "run", "--listen", f"127.0.0.1:{port}"]
    args += ["--state-dir", str(tmp_path / "state"), "--web.config.file", str(tmp_path / "web.yml"), str(log)]
    agent = Proc(args, tmp_path / "agent.out")
    wait_for(
        lambda: agent.alive() and "serving /metrics on https" in agent.output(), 30, "agent never served"
    )
    return agent, port


def start_prometheus(tmp_path: Path, jobs: list[dict[str, Any]]) -> tuple[Proc, str]:
    config = {"global": {"scrape_interval": "1s", "scrape_timeout": "1s"}, "scrape_configs": jobs}
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = free_port()
    args = [
        require_tool("prometheus"),
        f"--config.file={tmp_path / 'prometheus.yml'}",
        f"--storage.tsdb.path={tmp_path / 'tsdb'}",
        f"--web.listen-address=127.0.0.1:{port}",
        "--log.level=warn",
    ]
    prom = Proc(args, tmp_path / "prometheus.out")
    url = f"http://127.0.0.1:{port}"
    wait_for(lambda: prom.alive() and _ready(url + "/-/ready"), 30, "prometheus never became ready")
    return prom, url


def _ready(url: str) -> bool:
    try:
        return fetch(url)[0] == 200
    except OSError:
        return False


def prom_api(url: str, path: str, **params: str) -> Any:
    with urllib.request.urlopen(f"{url}/api/v1/{path}?{urllib.parse.urlencode(params)}", timeout=5) as resp:
        body = json.load(resp)
    assert body["status"] == "success"
    return body["data"]


def targets(url: str) -> dict[str, dict[str, Any]]:
    return {t["scrapePool"]: t for t in prom_api(url, "targets")["activeTargets"]}


def job(name: str, port: int, tls: dict[str, str], **extra: Any) -> dict[str, Any]:
    return {
        "job_name": name,
        "scheme": "https",
        "tls_config": tls,
        "static_configs": [{"targets": [f"127.0.0.1:{port}"]}],
        **extra,
    }


def _scraped_value(url: str) -> float | None:
    result = prom_api(url, "query", query='acceptmon_decode_batches_total{job="acceptmon"}')["result"]
    return float(result[0]["value"][1]) if result else None


def _check_prometheus_scrapes(url: str, refused: str, why: str) -> None:
    wait_for(lambda: targets(url).get("acceptmon", {}).get("health") == "up", 30, "target never up")
    wait_for(lambda: _scraped_value(url) == DECODES, 30, "decode batches never reached Prometheus")
    wait_for(lambda: targets(url).get(refused, {}).get("health") == "down", 30, "unauthorised job was up")
    assert why in targets(url)[refused]["lastError"]


@pytest.fixture
def procs() -> Iterator[list[Proc]]:
    started: list[Proc] = []
    yield started
    for p in started:
        p.stop()


def test_prometheus_scrapes_over_https_with_basic_auth(
    tmp_path: Path, certs: Certs, procs: list[Proc]
) -> None:
    hashed = bcrypt.hashpw(b"scrape-pw", bcrypt.gensalt(10)).decode()
    web = {
        "tls_server_config": {"cert_file": str(certs.server_cert), "key_file": str(certs.server_key)},
        "basic_auth_users": {"prometheus": hashed},
    }
    agent, port = start_agent(tmp_path, web)
    procs.append(agent)
    tls = {"ca_file": str(certs.ca)}
    prom, url = start_prometheus(
        tmp_path,
        [
            job("acceptmon", port, tls, basic_auth={"username": "prometheus", "password": "scrape-pw"}),
            job("wrong-password", port, tls, basic_auth={"username": "prometheus", "password": "guess"}),
        ],
    )
    procs.append(prom)
    _check_prometheus_scrapes(url, "wrong-password", "401")
    ctx = ssl.create_default_context(cafile=str(certs.ca))
    status, headers = fetch(f"https://127.0.0.1:{port}/metrics", ctx)
    assert status == 401 and headers["WWW-Authenticate"] == "Basic"
    assert fetch(f"https://127.0.0.1:{port}/api/runs", ctx)[0] == 401
    assert fetch(f"https://127.0.0.1:{port}/api/runs", ctx, "prometheus:scrape-pw")[0] == 200
    assert fetch(f"https://127.0.0.1:{port}/healthz", ctx)[0] == 200  # probes need no credentials
    with pytest.raises((OSError, ConnectionError)):
        fetch(f"http://127.0.0.1:{port}/metrics")  # plain HTTP to the TLS port
    assert "scrape-pw" not in agent.output() and hashed not in agent.output()
    assert agent.stop() == 0


def test_prometheus_scrapes_with_a_client_certificate(
    tmp_path: Path, certs: Certs, procs: list[Proc]
) -> None:
    web = {
        "tls_server_config": {
            "cert_file": str(certs.server_cert),
            "key_file": str(certs.server_key),
            "client_auth_type": "RequireAndVerifyClientCert",
            "client_ca_file": str(certs.ca),
            "min_version": "TLS12",
        }
    }
    agent, port = start_agent(tmp_path, web)
    procs.append(agent)
    with_cert = {
        "ca_file": str(certs.ca),
        "cert_file": str(certs.client_cert),
        "key_file": str(certs.client_key),
    }
    prom, url = start_prometheus(
        tmp_path, [job("acceptmon", port, with_cert), job("no-cert", port, {"ca_file": str(certs.ca)})]
    )
    procs.append(prom)
    _check_prometheus_scrapes(url, "no-cert", "certificate")
    ctx = ssl.create_default_context(cafile=str(certs.ca))
    with pytest.raises(OSError):
        fetch(f"https://127.0.0.1:{port}/metrics", ctx)  # no client certificate: the handshake fails
    ctx.load_cert_chain(str(certs.client_cert), str(certs.client_key))
    assert fetch(f"https://127.0.0.1:{port}/metrics", ctx)[0] == 200
    with pytest.raises(OSError):
        fetch(f"http://127.0.0.1:{port}/metrics")
    assert agent.stop() == 0


def test_listening_beyond_loopback_without_a_web_config_warns_once(tmp_path: Path, procs: list[Proc]) -> None:
    log = tmp_path / "server.log"
    log.write_text("\n".join(synth.startup(START, seed=1)) + "\n")
    port = free_port()
    args = [sys.executable, "-m", "acceptmon", "run", "--listen", f"0.0.0.0:{port}"]
    agent = Proc([*args, "--state-dir", str(tmp_path / "state"), str(log)], tmp_path / "agent.out")
    procs.append(agent)
    wait_for(
        lambda: agent.alive() and "serving /metrics on http://" in agent.output(), 30, "agent never served"
    )
    # /metrics answers 503 until the checkpoint is restored, then 200.
    wait_for(lambda: fetch(f"http://127.0.0.1:{port}/metrics")[0] == 200, 30, "/metrics never answered 200")
    warnings = [line for line in agent.output().splitlines() if " WARNING " in line and "web config" in line]
    assert len(warnings) == 1 and "without a web config" in warnings[0], warnings
