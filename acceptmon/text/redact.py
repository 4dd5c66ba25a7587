"""Secrets inside an inference server's start line never leave acceptmon.

SGLang's ``server_args`` (and vLLM's non-default args) carry API keys,
key-file passwords, HF tokens, presigned URLs and credentials embedded in
URLs, headers and environment-style text. They are replaced as the start line
is parsed, so no snapshot, diff, finding, API response, alert, state file or
log can hold them. A replaced value reads ``<redacted:1a2b3c4d>``: a keyed
fingerprint (HMAC-SHA256), so "api_key changed" stays visible while the value,
or a guess of it, cannot be checked offline without the key.

What is redacted (when in doubt, redact: a leaked token costs more than a
hidden one):

- the value (string or number) of any key whose *last* word (split on
  ``_ - .`` and camelCase) is key, token, secret, password, passwd, pwd,
  passphrase, credential(s), auth, authorization, apikey, cookie(s),
  signature or sas, or any of whose words is password, passwd, passphrase,
  secret, credential(s) or cookie: ``api_key``, ``ssl_keyfile_password``,
  ``hf_token``, ``set-cookie`` — but not ``ssl_keyfile`` (a path),
  ``speculative_token_map`` (a path), ``max_total_tokens`` or ``tokenizer_path``;
- anywhere, in any string (nested dicts and lists, JSON inside strings such
  as ``json_model_override_args``):

  - the password of ``scheme://user:pass@`` URLs;
  - a URL query (or an ``a=1&b=2`` run) holding any credential parameter
    (``X-Amz-Signature``, ``X-Amz-Credential``, ``X-Goog-Signature``, Azure
    SAS ``sv=…&sig=``, ``token=``, ``apikey=``, ``access_token=``, …) is
    replaced whole by one constant ``<redacted:query>``: a presigned URL is
    signed anew at every start, and must not show as a change;
  - ``Authorization:``/``Proxy-Authorization:``/``Cookie:``/``Set-Cookie:``
    header values, ``Bearer …`` and ``Basic …`` credentials;
  - ``NAME=value``, ``NAME: value`` and ``--name value`` whose NAME is a
    secret key as above (``HF_TOKEN=…``, ``OPENAI_API_KEY=…``, ``DB_PASSWORD=…``);
  - strings with a well-known token prefix (``hf_``, ``sk-``, ``ghp_`` and
    kin, ``github_pat_``, ``glpat-``, ``xox?-``, ``AKIA``/``ASIA…``, ``AIza…``,
    ``ya29.``, ``npm_``, ``pypi-``, three-part JWTs);
  - high-entropy runs (long hex, or 20+ characters that read like base64
    rather than words), except under keys known to be harmless: paths,
    directories, names, models, revisions and hashes stay visible, as an ML
    engineer needs them in a diff. Numbers are never entropy-redacted.

The key is process-wide: the agent loads one from its state directory
(``redact.key``, mode 0600) so fingerprints are stable across restarts;
elsewhere ``ACCEPTMON_REDACT_KEY`` or a random per-process key is used.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import re
from pathlib import Path
from typing import Any

from acceptmon.statefiles import read_private

log = logging.getLogger("acceptmon.agent")

#: What a redacted value starts with; ``is_redacted`` looks for it.
MARK = "<redacted:"
#: A credential-bearing URL query, replaced whole and without a fingerprint (it changes every start).
QUERY_MARK = MARK + "query>"
#: A value that is wholly one redaction (what the diff may drop; see ``is_wholly_redacted``).
_WHOLE_MARK = re.compile(r"<redacted:[0-9a-z]{1,16}>")

_LAST_WORDS = frozenset(
    {
        *("key", "token", "secret", "password", "passwd", "pwd", "passphrase", "credential", "credentials"),
        *("auth", "authorization", "apikey", "cookie", "cookies", "signature", "sas"),
    }
)
_ANY_WORDS = frozenset({"password", "passwd", "passphrase", "secret", "credential", "credentials", "cookie"})
_WORD_SPLIT = re.compile(r"[_\-.\s]+|(?<=[a-z0-9])(?=[A-Z])")
#: Query parameters that sign or authorise a URL, beyond what ``is_secret_key`` says.
_QUERY_WORDS = frozenset(
    {
        *("sig", "sv", "se", "skoid", "sktid", "x-amz-credential", "x-amz-security-token", "x-amz-date"),
        *("x-goog-credential", "x-goog-date", "googleaccessid", "awsaccesskeyid", "key-pair-id", "policy"),
        *("code", "access_token", "id_token", "refresh_token", "client_secret"),
    }
)
#: Keys whose values an engineer must see in a diff: exempt from the entropy guess (never from
#: the shapes above). The last word of the key decides.
_HARMLESS_LAST = frozenset(
    {
        *(
            "path",
            "paths",
            "dir",
            "name",
            "model",
            "tokenizer",
            "revision",
            "version",
            "architectures",
            "commit",
        ),
        *("hash", "sha", "sha1", "sha256", "sha512", "md5", "digest", "checksum", "etag"),  # config identity
    }
)

# Linear patterns only: bounded prefixes, then one (possessive) character class.
_URL_USERINFO = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]{0,30}://[^/\s:@]{0,256}:)([^/\s@]{1,512})@")
_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie", "set-cookie"})
_CHUNK = re.compile(r"[^\s'\"<>]++")  # a query's candidate: one run without spaces or quotes
_HEADER = re.compile(
    r"(?i)(?<![A-Za-z0-9_\-])((?:proxy-)?authorization|(?:set-)?cookie)([\"']?\s{0,4}[:=]\s{0,4}[\"']?)"
    r"((?:basic|bearer|digest|negotiate|ntlm|token|aws4-hmac-sha256)\s{1,8})?([^\r\n\"']++)"
)
# ``NAME=value`` / ``name: value`` / ``--name value``, where NAME ends in a secret word (whether it
# really is a secret key, ``is_secret_key`` decides); the value may be quoted.
_SECRET_NAME = (
    r"[A-Za-z0-9_.\-]{0,100}?(?i:key|token|secret|passw(?:or)?d|pwd|passphrase|credentials?|auth"
    r"|authorization|apikey|cookies?|signature|sas)[A-Za-z0-9_.\-]{0,40}?"
)
_VALUE = r"(\"[^\"\r\n]*+\"|'[^'\r\n]*+'|[^\s\"',;&)}\]=]++)"
_ASSIGN = re.compile(rf"(?<![A-Za-z0-9_\-.])({_SECRET_NAME})([\"']?\s{{0,4}}[:=]\s{{0,4}}){_VALUE}")
_FLAG = re.compile(rf"(?<![A-Za-z0-9_\-.])(--{_SECRET_NAME})(\s{{1,4}}){_VALUE}")
_TOKENS = re.compile(
    r"(?<![A-Za-z0-9])(?:"
    r"hf_[A-Za-z0-9]{8,}"
    r"|sk-[A-Za-z0-9_\-]{8,}"
    r"|(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{8,}"
    r"|gh[opusr]_[A-Za-z0-9]{8,}"
    r"|github_pat_[A-Za-z0-9_]{8,}"
    r"|glpat-[A-Za-z0-9_\-]{8,}"
    r"|xox[abeprs]-[A-Za-z0-9\-]{8,}"
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}"
    r"|AIza[0-9A-Za-z_\-]{30,}"
    r"|ya29\.[0-9A-Za-z_\-]{8,}"
    r"|npm_[A-Za-z0-9]{16,}"
    r"|pypi-[A-Za-z0-9_\-]{16,}"
    r"|eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{4,}"
    r")"
)
_BEARER = re.compile(r"(?i)(\bbearer\s{1,8})([A-Za-z0-9._~+/\-]{8,}=*)")
_BASIC = re.compile(r"(?i)(\bbasic\s{1,8})([A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])")
# The entropy guess: a run of base64/base64url characters (and ``=`` padding).
_RUN = re.compile(r"(?<![A-Za-z0-9+/_\-])[A-Za-z0-9+/_\-]{20,}+={0,2}")
_FRAGMENT = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")
_HEX = re.compile(r"[0-9a-fA-F]{32,}")
_NOT_HEX = re.compile(r"[^0-9a-fA-F]+")
_SEPARATORS = re.compile(r"[^A-Za-z0-9]+")
_DIGIT_EDGE = re.compile(r"(?<=[A-Za-z])(?=[0-9])|(?<=[0-9])(?=[A-Za-z])")

#: The fingerprint key, in a holder so that ``set_key`` swaps it for every caller.
_KEY: list[bytes] = [os.environ.get("ACCEPTMON_REDACT_KEY", "").encode() or os.urandom(32)]


def set_key(key: bytes) -> None:
    """Use ``key`` for fingerprints from now on (the agent's, from its state directory)."""
    _KEY[0] = key


def load_key(state_dir: str | Path) -> None:
    """Load (or create, 0600) the fingerprint key kept in ``state_dir``; keep the current one on error."""
    path = Path(state_dir) / "redact.key"
    try:
        data = _read_or_create(path)
    except OSError as exc:  # a symlink planted there (never followed), a directory, unreadable
        log.error("cannot use %s (%s); keeping the current fingerprint key", path, exc.strerror)
        return
    if len(data) >= 16:
        set_key(data)


def _read_or_create(path: Path) -> bytes:
    try:
        return read_private(path)  # never through a symlink planted in its place
    except FileNotFoundError:
        data = os.urandom(32)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:  # another start raced us: use its key
            return read_private(path)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        return data


def fingerprint(value: str) -> str:
    return hmac.new(_KEY[0], value.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()[:8]


def marker(value: str) -> str:
    return f"{MARK}{fingerprint(value)}>"


def _words(name: str) -> list[str]:
    return [w.lower() for w in _WORD_SPLIT.split(str(name)) if w]


def is_secret_key(name: str) -> bool:
    words = _words(name)
    return bool(words) and (words[-1] in _LAST_WORDS or any(w in _ANY_WORDS for w in words))


def is_harmless_key(name: str) -> bool:
    """Keys whose values stay visible even when they look random (paths, names, revisions, hashes)."""
    words = _words(name)
    return bool(words) and words[-1] in _HARMLESS_LAST and not is_secret_key(name)


def is_redacted(value: Any) -> bool:
    return isinstance(value, str) and MARK in value


def is_wholly_redacted(value: Any) -> bool:
    """The value is one redaction and nothing else (contrast a URL that merely holds one)."""
    return isinstance(value, str) and _WHOLE_MARK.fullmatch(value) is not None


def masked(value: Any) -> str:
    """``value`` with every redaction made alike: equal when only secrets differ (a rotated key)."""
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=repr)
    return _WHOLE_MARK.sub(MARK + ">", text)


def redact_args(args: dict[str, Any]) -> dict[str, Any]:
    """A copy of a start line's arguments with every secret replaced (see the module docs)."""
    return {k: _value(v, is_secret_key(k), is_harmless_key(k)) for k, v in args.items()}


def _value(value: Any, secret: bool, harmless: bool = False) -> Any:
    if isinstance(value, str):
        if _WHOLE_MARK.fullmatch(value):  # already redacted: redacting is idempotent
            return value
        if secret and value:
            return marker(value)
        return redact_text(value, harmless)
    if isinstance(value, dict):
        return {
            k: _value(v, secret or is_secret_key(str(k)), is_harmless_key(str(k)) and not secret)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [_value(v, secret, harmless) for v in value]
    if secret and isinstance(value, int | float) and not isinstance(value, bool):
        return marker(repr(value))
    return value


def redact_text(text: str, harmless: bool = False) -> str:
    """Credentials embedded in free text (see the module docs); ``harmless`` skips the entropy guess."""
    stripped = text.strip()
    if stripped[:1] in ("{", "[") and len(stripped) > 1:
        try:
            inner = json.loads(stripped)
        except ValueError:
            pass
        else:
            if isinstance(inner, dict | list):
                return json.dumps(_value(inner, False, harmless), ensure_ascii=False)
    if "@" in text:
        text = _URL_USERINFO.sub(lambda m: m.group(1) + _mark(m.group(2)) + "@", text)
    if "=" in text:
        text = _CHUNK.sub(_query, text)
    if ":" in text or "=" in text:
        text = _HEADER.sub(_header, text)
    text = _ASSIGN.sub(_assign, text)
    if "--" in text:
        text = _FLAG.sub(_assign, text)
    text = _BEARER.sub(lambda m: m.group(1) + _mark(m.group(2)), text)
    text = _BASIC.sub(
        lambda m: m.group(1) + _mark(m.group(2)) if _base64ish(m.group(2)) else m.group(0), text
    )
    text = _TOKENS.sub(lambda m: marker(m.group(0)), text)
    return (
        text
        if harmless
        else _RUN.sub(lambda m: marker(m.group(0)) if _random(m.group(0)) else m.group(0), text)
    )


def _mark(secret: str) -> str:
    return secret if secret.startswith(MARK) else marker(secret)


def _query(m: re.Match[str]) -> str:
    """A URL query (or an ``a=1&b=2`` run) naming any credential parameter goes whole, so a
    re-signed URL reads the same; a query without one stays (``?revision=main`` may matter)."""
    chunk = m.group(0)
    head, mark, query = chunk.partition("?")
    if not mark:
        head, query = "", chunk
        if "&" not in query:
            return chunk
    query, hash_, fragment = query.partition("#")
    names = [p.partition("=")[0] for p in query.split("&") if "=" in p]
    if not any(n.lower() in _QUERY_WORDS or is_secret_key(n) for n in names):
        return chunk
    return head + mark + QUERY_MARK + hash_ + fragment


def _header(m: re.Match[str]) -> str:
    value = m.group(4).rstrip()
    return m.group(1) + m.group(2) + (m.group(3) or "") + _mark(value) + m.group(4)[len(value) :]


def _assign(m: re.Match[str]) -> str:
    name, sep, value = m.group(1), m.group(2), m.group(3)
    if name.lower() in _HEADERS or not is_secret_key(name.lstrip("-")) or MARK in value[:12]:
        return m.group(0)  # a header (done whole already), a plain key, or redacted already
    if value[:1] in ("'", '"'):
        return name + sep + value[0] + marker(value[1:-1]) + value[0] if len(value) > 2 else m.group(0)
    return name + sep + marker(value)


def _base64ish(value: str) -> bool:
    """``Basic dXNlcjpwYXNz``, not ``Basic configuration``: mixed case, a digit or padding."""
    return "=" in value or any(c.isdigit() for c in value) or value[1:] != value[1:].lower()


def _random(run: str) -> bool:
    """A run reads as random (base64, hex) rather than words: its letters and digits break into
    short pieces (``YkZdZmuPBxStDzmG`` → Yk Zd Zmu …; ``LlamaForCausalLMEagle3`` → Llama For …).
    Runs of short parts (``fp8_e4m3_kv_cache``, ``Qwen3-8B``) are names, not tokens."""
    alnum = sum(c.isalnum() for c in run)
    if alnum < 16 or not any(c.isalpha() for c in run):
        return False
    if any(_HEX.fullmatch(piece) for piece in _NOT_HEX.split(run)):
        return True
    if max(map(len, _SEPARATORS.split(run))) < 12:
        return False
    mixed = len(_DIGIT_EDGE.findall(run))  # letters and digits interleaved (``a8f3k2m9``)
    return alnum / len(_FRAGMENT.findall(run)) <= 2.4 or mixed / alnum >= 0.25
