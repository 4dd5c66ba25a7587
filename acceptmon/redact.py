"""Secrets inside an inference server's start line never leave acceptmon.

SGLang's ``server_args`` (and vLLM's non-default args) carry API keys,
key-file passwords, HF tokens and credentials embedded in URLs. They are
replaced as the start line is parsed, so no snapshot, diff, finding, API
response, alert, state file or log can hold them. A replaced value reads
``<redacted:1a2b3c4d>``: a keyed fingerprint (HMAC-SHA256), so "api_key
changed" stays visible while the value, or a guess of it, cannot be checked
offline without the key.

What is redacted:

- the string value of any key whose *last* word (split on ``_ - .`` and
  camelCase) is key, token, secret, password, passwd, pwd, credential(s),
  auth or apikey, or any of whose words is password, passwd, secret or
  credential(s): ``api_key``, ``admin_api_key``, ``ssl_keyfile_password``,
  ``hf_token`` — but not ``ssl_keyfile`` (a path), ``speculative_token_map``
  (a path), ``max_total_tokens`` or ``tokenizer_path``;
- anywhere, in any string (nested dicts and lists, JSON inside strings such
  as ``json_model_override_args``): the password of ``scheme://user:pass@``
  URLs, ``Bearer …`` tokens and strings with a well-known token prefix
  (``hf_``, ``sk-``, ``ghp_``/``gho_``/``ghu_``/``ghs_``/``ghr_``,
  ``github_pat_``, ``glpat-``, ``xox?-``, ``AKIA…``, three-part JWTs).

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

from acceptmon.statedir import read_private

log = logging.getLogger("acceptmon.agent")

#: What a redacted value starts with; ``is_redacted`` looks for it.
MARK = "<redacted:"

_LAST_WORDS = frozenset(
    {"key", "token", "secret", "password", "passwd", "pwd", "credential", "credentials", "auth", "apikey"}
)
_ANY_WORDS = frozenset({"password", "passwd", "secret", "credential", "credentials"})
_WORD_SPLIT = re.compile(r"[_\-.\s]+|(?<=[a-z0-9])(?=[A-Z])")

# Linear patterns only: bounded prefixes, then one character class.
_URL_USERINFO = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]{0,30}://[^/\s:@]{0,256}:)([^/\s@]{1,512})@")
_TOKENS = re.compile(
    r"(?<![A-Za-z0-9])(?:"
    r"hf_[A-Za-z0-9]{8,}"
    r"|sk-[A-Za-z0-9_\-]{8,}"
    r"|gh[opusr]_[A-Za-z0-9]{8,}"
    r"|github_pat_[A-Za-z0-9_]{8,}"
    r"|glpat-[A-Za-z0-9_\-]{8,}"
    r"|xox[abprs]-[A-Za-z0-9\-]{8,}"
    r"|AKIA[0-9A-Z]{16}"
    r"|eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{4,}"
    r")"
)
_BEARER = re.compile(r"(?i)(\bbearer\s{1,8})([A-Za-z0-9._~+/\-]{8,}=*)")

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


def is_secret_key(name: str) -> bool:
    words = [w.lower() for w in _WORD_SPLIT.split(str(name)) if w]
    return bool(words) and (words[-1] in _LAST_WORDS or any(w in _ANY_WORDS for w in words))


def is_redacted(value: Any) -> bool:
    return isinstance(value, str) and MARK in value


def redact_args(args: dict[str, Any]) -> dict[str, Any]:
    """A copy of a start line's arguments with every secret replaced (see the module docs)."""
    return {k: _value(v, is_secret_key(k)) for k, v in args.items()}


def _value(value: Any, secret: bool) -> Any:
    if isinstance(value, str):
        if value.startswith(MARK):  # already redacted: redacting is idempotent
            return value
        if secret and value:
            return marker(value)
        return redact_text(value)
    if isinstance(value, dict):
        return {k: _value(v, secret or is_secret_key(str(k))) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_value(v, secret) for v in value]
    return value


def redact_text(text: str) -> str:
    """Credentials embedded in free text: URL passwords, bearer tokens, known token shapes, JSON."""
    stripped = text.strip()
    if stripped[:1] in ("{", "[") and len(stripped) > 1:
        try:
            inner = json.loads(stripped)
        except ValueError:
            pass
        else:
            if isinstance(inner, dict | list):
                return json.dumps(_value(inner, False), ensure_ascii=False)
    if "@" in text:
        text = _URL_USERINFO.sub(lambda m: m.group(1) + marker(m.group(2)) + "@", text)
    text = _BEARER.sub(lambda m: m.group(1) + marker(m.group(2)), text)
    return _TOKENS.sub(lambda m: marker(m.group(0)), text)
