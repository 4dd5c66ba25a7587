"""The exporter-toolkit web config: validated whole, secrets never echoed, auth in constant work."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import bcrypt
import pytest
import yaml

from acceptmon import settings as config_mod
from acceptmon.settings.web import BasicAuth, WebSettings, read_web_settings
from tests.conftest import ROOT
from tests.support.certs import Certs, make_certs

HASH = bcrypt.hashpw(b"s3cret-pass", bcrypt.gensalt(4)).decode()


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"))


def write(tmp_path: Path, data: object) -> str:
    path = tmp_path / "web.yml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def problems(path: str) -> list[str]:
    found: list[str] = []
    assert read_web_settings(path, found) is None
    return found


def load_web_settings(path: str) -> WebSettings:
    found: list[str] = []
    web = read_web_settings(path, found)
    assert web is not None and found == [], found
    return web


def test_full_config_loads_with_relative_paths(tmp_path: Path, certs: Certs) -> None:
    path = write(
        tmp_path,
        {
            "tls_server_config": {
                "cert_file": str(certs.server_cert),
                "key_file": str(certs.server_key),
                "client_auth_type": "RequireAndVerifyClientCert",
                "client_ca_file": str(certs.ca),
                "min_version": "TLS13",
            },
            "http_server_config": {
                "http2": False,
                "headers": {"x-frame-options": "deny", "X-XSS-Protection": ""},
            },
            "basic_auth_users": {"prom": HASH},
        },
    )
    web = load_web_settings(path)
    assert web.tls is not None and web.tls.min_version == "TLS13" and web.tls.max_version == "TLS13"
    assert web.headers == (("X-Frame-Options", "deny"),)  # canonical name; a blank value is unset
    assert dict(web.users) == {"prom": HASH} and web.secured
    (tmp_path / "sub").mkdir()
    for name in ("server.crt", "server.key"):
        (tmp_path / "sub" / name).write_bytes((certs.server_cert.parent / name).read_bytes())
    rel = write(
        tmp_path / "sub", {"tls_server_config": {"cert_file": "server.crt", "key_file": "server.key"}}
    )
    loaded = load_web_settings(rel)
    assert loaded.tls is not None and loaded.tls.cert_file == str(tmp_path / "sub" / "server.crt")


def test_every_problem_is_reported_at_once(tmp_path: Path, certs: Certs) -> None:
    path = write(
        tmp_path,
        {
            "tls_server_config": {
                "cert_file": str(certs.server_cert),
                "client_auth_type": "VerifyEverything",
                "min_version": "SSL3",
                "cipher_suites": ["TLS_AES_128_GCM_SHA256"],
            },
            "http_server_config": {
                "headers": {"Content-Type": "text/html", "X-Content-Type-Options": "sniff"}
            },
            "basic_auth_users": {"prom": "hunter2-plaintext"},
            "rate_limit": {"interval": "1s"},
            "bogus": 1,
        },
    )
    found = "\n".join(problems(path))
    for needle in (
        "bogus: unknown key",
        "rate_limit: an exporter-toolkit setting acceptmon does not support",
        "cipher_suites: an exporter-toolkit setting",
        "key_file: required",
        "client_auth_type: expected one of NoClientCert",
        "min_version: expected one of TLS10",
        "headers.Content-Type: this header cannot be set",
        "headers.X-Content-Type-Options: expected one of nosniff",
        "basic_auth_users.prom: expected a bcrypt hash",
    ):
        assert needle in found, found
    assert "hunter2" not in found  # a plain-text password put in by mistake is not echoed


def test_client_auth_needs_a_ca_and_a_ca_needs_client_auth(tmp_path: Path, certs: Certs) -> None:
    tls = {"cert_file": str(certs.server_cert), "key_file": str(certs.server_key)}
    verify = write(tmp_path, {"tls_server_config": {**tls, "client_auth_type": "RequireAndVerifyClientCert"}})
    assert any("needs client_ca_file" in p for p in problems(verify))
    no_auth = write(tmp_path, {"tls_server_config": {**tls, "client_ca_file": str(certs.ca)}})
    assert any("client_auth_type is NoClientCert" in p for p in problems(no_auth))


def test_unloadable_certificate_is_a_problem(tmp_path: Path, certs: Certs) -> None:
    mismatched = write(
        tmp_path,
        {"tls_server_config": {"cert_file": str(certs.server_cert), "key_file": str(certs.client_key)}},
    )
    assert any("cannot load the certificate" in p for p in problems(mismatched))
    missing = write(tmp_path, {"tls_server_config": {"cert_file": "nope.crt", "key_file": "nope.key"}})
    assert any("No such file" in p for p in problems(missing))


def test_unreadable_and_malformed_files(tmp_path: Path) -> None:
    assert "cannot read" in problems(str(tmp_path / "absent.yml"))[0]
    (tmp_path / "bad.yml").write_text("tls_server_config: [\n")
    assert "not valid YAML" in problems(str(tmp_path / "bad.yml"))[0]


def test_basic_auth_accepts_only_the_right_pair_and_caches_successes() -> None:
    auth = BasicAuth({"prom": HASH, "other": HASH})
    assert auth.check("prom", "s3cret-pass")
    assert auth.check("prom", "s3cret-pass")  # from the cache
    assert len(auth._cache) == 1
    assert not auth.check("prom", "wrong")
    assert not auth.check("nobody", "s3cret-pass")  # runs the dummy hash, never matches
    assert not auth.check("", "")
    assert len(auth._cache) == 1  # failures are never cached


def test_config_key_validates_the_file_and_check_config_refuses_it(tmp_path: Path) -> None:
    bad = write(tmp_path, {"basic_auth_users": {"prom": "plain"}})
    main = tmp_path / "acceptmon.yaml"
    main.write_text(yaml.safe_dump({"sources": ["/var/log/x.log"], "web_config_file": bad}))
    with pytest.raises(config_mod.SettingsError) as exc:
        config_mod.load(str(main))
    assert any("basic_auth_users.prom" in p for p in exc.value.problems)
    proc = subprocess.run(
        [sys.executable, "-m", "acceptmon", "check-config", str(main)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2 and "expected a bcrypt hash" in proc.stderr and "plain" not in proc.stderr
    good = write(tmp_path, {"basic_auth_users": {"prom": HASH}})
    main.write_text(yaml.safe_dump({"sources": ["/var/log/x.log"], "web_config_file": good}))
    assert config_mod.load(str(main)).web_config_file == good


def test_shipped_example_is_valid_once_its_certificates_exist(tmp_path: Path, certs: Certs) -> None:
    example = yaml.safe_load((ROOT / "deploy" / "web-config.example.yml").read_text())
    example["tls_server_config"].update(cert_file=str(certs.server_cert), key_file=str(certs.server_key))
    web = load_web_settings(write(tmp_path, example))
    assert web.tls is not None and web.users and ("X-Content-Type-Options", "nosniff") in web.headers
    minimal = yaml.safe_load((ROOT / "deploy" / "acceptmon.minimal.yaml").read_text())
    assert minimal["listen"].startswith("127.0.0.1:")  # no open-to-all default


def test_a_renewed_certificate_is_served_and_a_broken_one_is_counted_once(
    tmp_path: Path, certs: Certs
) -> None:
    from acceptmon.settings.web import TlsContext

    for name in ("server.crt", "server.key"):
        (tmp_path / name).write_bytes((certs.server_cert.parent / name).read_bytes())
    web = load_web_settings(
        write(tmp_path, {"tls_server_config": {"cert_file": "server.crt", "key_file": "server.key"}})
    )
    assert web.tls is not None
    failures: list[int] = []
    tls = TlsContext(web.tls, lambda: failures.append(1))
    first = tls.get()
    (tmp_path / "server.crt").write_text("not a certificate, a half-written renewal\n")
    assert tls.get() is first and tls.get() is first  # the old one stays in use
    assert failures == [1]  # counted once per broken file, not per handshake
    (tmp_path / "server.crt").write_bytes(certs.server_cert.read_bytes())
    os.utime(tmp_path / "server.crt", ns=(1, 1))  # a renewal with a new mtime
    renewed = tls.get()
    assert renewed is not first and tls.get() is renewed and failures == [1]
