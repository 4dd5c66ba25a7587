"""The exporter-toolkit web configuration file: TLS, basic auth, extra headers.

Prometheus exporters share one file format for securing their HTTP endpoints
(``--web.config.file``); acceptmon reads the same file so that the scrape
job's ``scheme: https``/``basic_auth``/``tls_config`` work unchanged. The file
is read and validated whole once, with acceptmon's settings (``web_config_file``), so
``check-config`` refuses a broken one and the server uses what was checked.
Certificate and key files are re-read when they change (see ``TlsContext``).
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import re
import ssl
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from acceptmon.text.suggest import named, shown

log = logging.getLogger("acceptmon.webconfig")

_TOP = {"tls_server_config", "http_server_config", "basic_auth_users"}
_TLS = {"cert_file", "key_file", "client_auth_type", "client_ca_file", "min_version", "max_version"}
_HTTP = {"headers", "http2"}
#: exporter-toolkit keys acceptmon does not implement: refused rather than silently ignored.
_UNSUPPORTED = {
    "rate_limit",
    "cert",
    "key",
    "client_ca",
    "client_allowed_sans",
    "cipher_suites",
    "prefer_server_cipher_suites",
    "curve_preferences",
}
CLIENT_AUTH_TYPES = (
    "NoClientCert",
    "RequestClientCert",
    "RequireAnyClientCert",
    "VerifyClientCertIfGiven",
    "RequireAndVerifyClientCert",
)
TLS_VERSIONS = {
    "TLS10": ssl.TLSVersion.TLSv1,
    "TLS11": ssl.TLSVersion.TLSv1_1,
    "TLS12": ssl.TLSVersion.TLSv1_2,
    "TLS13": ssl.TLSVersion.TLSv1_3,
}
#: The only headers exporter-toolkit lets the file add, with their allowed values (None: any).
ALLOWED_HEADERS: dict[str, tuple[str, ...] | None] = {
    "Content-Security-Policy": None,
    "X-Frame-Options": ("deny", "sameorigin"),
    "X-Content-Type-Options": ("nosniff",),
    "X-XSS-Protection": None,
    "Strict-Transport-Security": None,
}
_BCRYPT = re.compile(r"^\$2[abxy]?\$(\d\d)\$[./A-Za-z0-9]{53}$")


@dataclass(frozen=True, slots=True)
class TlsSettings:
    cert_file: str
    key_file: str
    client_auth_type: str = "NoClientCert"
    client_ca_file: str | None = None
    min_version: str = "TLS12"
    max_version: str = "TLS13"


@dataclass(frozen=True, slots=True)
class WebSettings:
    tls: TlsSettings | None = None
    users: Mapping[str, str] = field(default_factory=dict)  # username -> bcrypt hash
    headers: tuple[tuple[str, str], ...] = ()

    @property
    def secured(self) -> bool:
        return bool(self.users) or (
            self.tls is not None and self.tls.client_auth_type == "RequireAndVerifyClientCert"
        )


def read_web_settings(path: str, problems: list[str]) -> WebSettings | None:
    """Read and validate ``path`` (once per settings load); None, with every problem appended
    as ``web config PATH: ...``, when it cannot be used."""
    found: list[str] = []
    web = _read(path, found)
    problems += [f"web config {path}: {p}" for p in found]
    return None if found else web


def _read(path: str, problems: list[str]) -> WebSettings | None:
    try:
        raw = yaml.safe_load(Path(path).read_text()) or {}
    except OSError as exc:
        problems.append(f"cannot read: {exc.strerror or exc}")
        return None
    except yaml.YAMLError as exc:
        problems.append(f"not valid YAML: {exc}")
        return None
    except ValueError:  # a NUL in the name, or bytes that are not UTF-8
        problems.append("cannot read: not a readable text file")
        return None
    if not isinstance(raw, Mapping):
        problems.append("expected a mapping at the top level")
        return None
    _unknown(raw, _TOP, "", problems)
    base = Path(path).resolve().parent
    tls = _tls(_section(raw, "tls_server_config", problems), base, problems)
    headers = _headers(_section(raw, "http_server_config", problems), problems)
    users = _users(raw.get("basic_auth_users"), problems)
    if tls is not None and not problems:
        try:
            build_context(tls)
        except (OSError, ssl.SSLError, ValueError) as exc:
            problems.append(f"tls_server_config: cannot load the certificate, key or CA: {_why(exc)}")
    return WebSettings(tls=tls, users=users, headers=headers)


def _why(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.filename or ''}: {exc.strerror}".lstrip(": ")
    return str(exc) or type(exc).__name__


def _section(raw: Mapping[str, Any], key: str, problems: list[str]) -> Mapping[str, Any]:
    value = raw.get(key) or {}
    if not isinstance(value, Mapping):
        problems.append(f"{key}: expected a mapping")
        return {}
    return value


def _unknown(raw: Mapping[str, Any], known: set[str], where: str, problems: list[str]) -> None:
    for key in sorted(set(raw) - known, key=str):
        if key in _UNSUPPORTED:
            problems.append(f"{where}{named(key)}: an exporter-toolkit setting acceptmon does not support")
        else:
            problems.append(f"{where}{named(key)}: unknown key (known: {', '.join(sorted(known))})")


def _tls(raw: Mapping[str, Any], base: Path, problems: list[str]) -> TlsSettings | None:
    where = "tls_server_config."
    _unknown(raw, _TLS, where, problems)
    if not raw:
        return None
    files: dict[str, str | None] = {}
    for key in ("cert_file", "key_file", "client_ca_file"):
        value = raw.get(key)
        if value is not None and (not isinstance(value, str) or not value):
            problems.append(f"{where}{key}: expected a file name")
            value = None
        files[key] = str(base / value) if value else None
    for key in ("cert_file", "key_file"):
        if files[key] is None:
            problems.append(f"{where}{key}: required when tls_server_config is set")
    auth = raw.get("client_auth_type", "NoClientCert")
    if auth not in CLIENT_AUTH_TYPES:
        problems.append(
            f"{where}client_auth_type: expected one of {', '.join(CLIENT_AUTH_TYPES)}, got {shown(auth)}"
        )
        auth = "NoClientCert"
    if files["client_ca_file"] and auth == "NoClientCert":
        problems.append(f"{where}client_ca_file is set but client_auth_type is NoClientCert")
    if not files["client_ca_file"] and auth in {"VerifyClientCertIfGiven", "RequireAndVerifyClientCert"}:
        problems.append(f"{where}client_auth_type {auth} needs client_ca_file")
    if auth == "RequireAnyClientCert" and not files["client_ca_file"]:
        problems.append(
            f"{where}client_auth_type RequireAnyClientCert: acceptmon can only require certificates it "
            "verifies; set client_ca_file (or use RequireAndVerifyClientCert)"
        )
    versions = {}
    for key, default in (("min_version", "TLS12"), ("max_version", "TLS13")):
        value = raw.get(key, default)
        if value not in TLS_VERSIONS:
            problems.append(f"{where}{key}: expected one of {', '.join(TLS_VERSIONS)}, got {shown(value)}")
            value = default
        versions[key] = str(value)
    if TLS_VERSIONS[versions["min_version"]] > TLS_VERSIONS[versions["max_version"]]:
        problems.append(f"{where}min_version is above max_version")
    if files["cert_file"] is None or files["key_file"] is None:
        return None
    return TlsSettings(
        cert_file=files["cert_file"],
        key_file=files["key_file"],
        client_auth_type=str(auth),
        client_ca_file=files["client_ca_file"],
        min_version=versions["min_version"],
        max_version=versions["max_version"],
    )


def _headers(raw: Mapping[str, Any], problems: list[str]) -> tuple[tuple[str, str], ...]:
    where = "http_server_config."
    _unknown(raw, _HTTP, where, problems)
    if "http2" in raw and not isinstance(raw["http2"], bool):
        problems.append(f"{where}http2: expected true or false")  # accepted; acceptmon serves HTTP/1.1
    headers = raw.get("headers") or {}
    if not isinstance(headers, Mapping):
        problems.append(f"{where}headers: expected a mapping of header name to value")
        return ()
    canonical = {name.lower(): name for name in ALLOWED_HEADERS}
    out = []
    for name, value in headers.items():
        proper = canonical.get(str(name).lower())
        if proper is None:
            problems.append(
                f"{where}headers.{named(name)}: this header cannot be set (allowed: {', '.join(ALLOWED_HEADERS)})"
            )
            continue
        if value is None or value == "":
            continue  # blank: unset, as in exporter-toolkit
        if not isinstance(value, str) or any(c in value for c in "\r\n\0"):
            problems.append(f"{where}headers.{named(name)}: expected a one-line string")
            continue
        allowed = ALLOWED_HEADERS[proper]
        if allowed is not None and value.lower() not in allowed:
            problems.append(
                f"{where}headers.{named(name)}: expected one of {', '.join(allowed)}, got {shown(value)}"
            )
            continue
        out.append((proper, value))
    return tuple(out)


def _users(raw: Any, problems: list[str]) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        problems.append("basic_auth_users: expected a mapping of username to bcrypt hash")
        return {}
    users = {}
    for name, hashed in raw.items():
        if not isinstance(name, str) or not name or ":" in name:
            problems.append(f"basic_auth_users: {shown(name)} is not a valid user name")
        elif not isinstance(hashed, str) or not _BCRYPT.match(hashed):
            # Never echo the value: it may be a plain-text password put there by mistake.
            problems.append(
                f"basic_auth_users.{name}: expected a bcrypt hash ($2y$10$...), see htpasswd -nBC 10"
            )
        else:
            users[name] = hashed
    return users


def build_context(tls: TlsSettings) -> ssl.SSLContext:
    """A server ``SSLContext`` for ``tls`` (reads the files now)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = TLS_VERSIONS[tls.min_version]
    ctx.maximum_version = TLS_VERSIONS[tls.max_version]
    if TLS_VERSIONS[tls.min_version] < ssl.TLSVersion.TLSv1_2:
        ctx.set_ciphers("DEFAULT:@SECLEVEL=0")  # OpenSSL 3 refuses TLS 1.0/1.1 at the default level
    ctx.load_cert_chain(tls.cert_file, tls.key_file)
    # RequestClientCert asks for a certificate it never checks; stdlib ssl cannot accept an
    # unverified one, and not asking is equivalent for security.
    if tls.client_auth_type == "VerifyClientCertIfGiven":
        ctx.verify_mode = ssl.CERT_OPTIONAL
    elif tls.client_auth_type in {"RequireAnyClientCert", "RequireAndVerifyClientCert"}:
        ctx.verify_mode = ssl.CERT_REQUIRED
    if tls.client_ca_file and ctx.verify_mode != ssl.CERT_NONE:
        ctx.load_verify_locations(cafile=tls.client_ca_file)
    return ctx


def _signature(tls: TlsSettings) -> tuple[tuple[int, int] | None, ...]:
    out: list[tuple[int, int] | None] = []
    for name in (tls.cert_file, tls.key_file, tls.client_ca_file):
        try:
            st = os.stat(name) if name else None
        except OSError:
            st = None
        out.append((st.st_mtime_ns, st.st_size) if st else None)
    return tuple(out)


class TlsContext:
    """The current ``SSLContext``, rebuilt when a certificate/key/CA file changes.

    Checked at each new connection (three ``stat`` calls), as exporter-toolkit
    re-reads its certificates per handshake: a renewed certificate is served
    without a restart. A broken new file keeps the old context and logs once.
    """

    def __init__(self, tls: TlsSettings, on_error: Callable[[], None] = lambda: None) -> None:
        self._tls = tls
        self._on_error = on_error
        self._sig = _signature(tls)
        self._ctx = build_context(tls)
        self._failed: tuple[tuple[int, int] | None, ...] | None = None
        self._lock = threading.Lock()

    def get(self) -> ssl.SSLContext:
        sig = _signature(self._tls)
        if sig in (self._sig, self._failed):
            return self._ctx
        with self._lock:
            try:
                self._ctx = build_context(self._tls)
            except (OSError, ssl.SSLError, ValueError) as exc:
                self._failed = sig
                self._on_error()
                log.error(
                    "TLS certificate/key changed but cannot be loaded, keeping the old one: %s", _why(exc)
                )
                return self._ctx
            self._sig, self._failed = sig, None
            log.info("TLS certificate/key reloaded")
        return self._ctx


class BasicAuth:
    """Checks ``user:password`` against bcrypt hashes in constant time per request.

    Usernames are compared with ``hmac.compare_digest`` against every user, and
    exactly one bcrypt check runs whether or not the user exists, so timing
    reveals neither. Each verdict is cached under a SHA-256 of (user, hash,
    password) — never the password itself: successes as exporter-toolkit does,
    so scrapes do not pay ~70 ms each, and failures, so a wrong password sent
    again costs no bcrypt check (a repeat reveals nothing the sender did not know).
    """

    CACHE_SIZE = 100
    FAILED_SIZE = 1024

    def __init__(self, users: Mapping[str, str]) -> None:
        import bcrypt

        self._bcrypt = bcrypt
        self._users = [(u.encode(), h.encode()) for u, h in users.items()]
        cost = max((int(h[4:6]) for _u, h in self._users), default=10)
        # A hash of the users' cost for unknown names, so they take as long as known ones.
        self._dummy = bcrypt.hashpw(os.urandom(16).hex().encode(), bcrypt.gensalt(cost))
        self._cache: OrderedDict[bytes, None] = OrderedDict()
        self._failed: OrderedDict[bytes, None] = OrderedDict()
        self._lock = threading.Lock()

    def _key(self, user: str, password: str) -> tuple[bytes, bytes, bool]:
        u = user.encode()
        hashed, found = self._dummy, False
        for name, h in self._users:
            if hmac.compare_digest(name, u) and not found:
                hashed, found = h, True
        return hashlib.sha256(b"\0".join((u, hashed, password.encode()))).digest(), hashed, found

    def cached(self, user: str, password: str) -> bool | None:
        """The remembered verdict for these credentials, None when only bcrypt can tell."""
        return self._remembered(self._key(user, password)[0])

    def _remembered(self, key: bytes) -> bool | None:
        with self._lock:
            for cache, verdict in ((self._cache, True), (self._failed, False)):
                if key in cache:
                    cache.move_to_end(key)
                    return verdict
        return None

    def check(self, user: str, password: str) -> bool:
        key, hashed, found = self._key(user, password)
        known = self._remembered(key)
        if known is not None:
            return known
        try:
            ok = bool(self._bcrypt.checkpw(password.encode(), hashed)) and found
        except ValueError:
            ok = False
        cache, size = (self._cache, self.CACHE_SIZE) if ok else (self._failed, self.FAILED_SIZE)
        with self._lock:
            cache[key] = None
            while len(cache) > size:
                cache.popitem(last=False)
        return ok
