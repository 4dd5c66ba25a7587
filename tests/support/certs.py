"""Test certificates made with the real ``openssl`` CLI: a CA, a server and a client."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.support.tools import require_tool


@dataclass(frozen=True)
class Certs:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path


def _openssl(*args: str | Path) -> None:
    subprocess.run([require_tool("openssl"), *map(str, args)], check=True, capture_output=True)


def issue(ca: Path, ca_key: Path, out: Path, name: str, server: bool) -> None:
    """``out``.crt/.key: a certificate for ``name`` signed by the CA."""
    key, csr, ext = out.with_suffix(".key"), out.with_suffix(".csr"), out.with_suffix(".ext")
    _openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", key)
    _openssl("req", "-new", "-key", key, "-subj", f"/CN={name}", "-out", csr)
    usage = "serverAuth" if server else "clientAuth"
    ext.write_text(f"subjectAltName=DNS:{name},IP:127.0.0.1\nextendedKeyUsage={usage}\n")
    _openssl(
        "x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial",
        "-days", "2", "-extfile", ext, "-out", out.with_suffix(".crt"),
    )  # fmt: skip


def make_certs(directory: Path) -> Certs:
    directory.mkdir(parents=True, exist_ok=True)
    ca, ca_key = directory / "ca.crt", directory / "ca.key"
    _openssl(
        "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
        "-keyout", ca_key, "-out", ca, "-days", "2", "-subj", "/CN=acceptmon test CA",
    )  # fmt: skip
    issue(ca, ca_key, directory / "server", "localhost", server=True)
    issue(ca, ca_key, directory / "client", "prometheus", server=False)
    return Certs(
        ca=ca,
        server_cert=directory / "server.crt",
        server_key=directory / "server.key",
        client_cert=directory / "client.crt",
        client_key=directory / "client.key",
    )
