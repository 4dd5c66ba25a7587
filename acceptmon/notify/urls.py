"""Where webhook URLs come from, and whether they look right — without saying them.

Messages name the *origin* (an environment variable or a file path), never
the value, so ``check-config`` output can be pasted into a ticket.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from acceptmon.notify.secret import Secret
from acceptmon.notify.settings import ChannelSettings, NotifySettings, NotifySettingsError, parse_partial

_LOOPBACK = {"127.0.0.1", "localhost", "::1"}
_SLACK_HOSTS = {"hooks.slack.com"}


def origin(channel: ChannelSettings) -> str:
    """Human description of where the URL is read from."""
    return f"env {channel.url_env}" if channel.url_env else f"file {channel.url_file}"


def load_url(channel: ChannelSettings, env: Mapping[str, str] | None = None) -> Secret:
    """Read and validate the URL; ``NotifySettingsError`` lists what is wrong."""
    secret, problems = _load(channel, os.environ if env is None else env)
    if secret is None or problems:
        raise NotifySettingsError(problems)
    return secret


def resolve_urls(config: NotifySettings, env: Mapping[str, str] | None = None) -> dict[str, Secret]:
    """``{notifier name: url}`` for every configured channel, or every problem at once."""
    urls: dict[str, Secret] = {}
    problems: list[str] = []
    for channel in config.channels():
        secret, found = _load(channel, os.environ if env is None else env)
        problems.extend(found)
        if secret is not None:
            urls[channel.name] = secret
    if problems:
        raise NotifySettingsError(problems)
    return urls


def parse_checked(section: Any, env: Mapping[str, str] | None = None) -> tuple[NotifySettings, list[str]]:
    """The ``notify:`` section parsed once, and all its problems in one go, unreadable or odd
    URLs included (a problem names where the secret comes from, never its value). A channel
    whose structure already has a problem under some key is not checked again under that key."""
    config, problems = parse_partial(section)
    said = {p.partition(":")[0] for p in problems}
    for channel in config.channels():
        if channel.url_env or channel.url_file:
            found = _load(channel, os.environ if env is None else env)[1]
            problems += [p for p in found if p.partition(":")[0] not in said]
    return config, problems


def _load(channel: ChannelSettings, env: Mapping[str, str]) -> tuple[Secret | None, list[str]]:
    label = {
        "slack": "slack webhook URL",
        "webhook": "webhook URL",
        "grafana": "grafana API token",
        "alertmanager": "alertmanager URL",
    }[channel.kind]
    what = f"{label} from {origin(channel)}"
    if channel.url_env:
        value = env.get(channel.url_env, "")
        if not value.strip():
            return None, [f"{what}: environment variable is not set or empty"]
    else:
        try:
            with open(str(channel.url_file), encoding="utf-8") as fh:
                value = fh.read()
        except OSError as exc:
            return None, [f"{what}: cannot read the file ({exc.strerror or type(exc).__name__})"]
        except UnicodeDecodeError:
            return None, [f"{what}: the file is not UTF-8 text"]
    secret = Secret(value.strip())
    if channel.kind == "grafana":
        return secret, grafana_problems(channel, secret, what)
    return secret, url_problems(channel, secret, what)


def grafana_problems(channel: ChannelSettings, token: Secret, what: str) -> list[str]:
    """The token must be one line; the base URL https (or loopback http when allowed)."""
    problems = []
    if any(ch.isspace() or ord(ch) < 32 for ch in token.reveal()):
        problems.append(f"{what}: contains whitespace or control characters")
    try:
        parts = urlsplit(channel.base_url or "")
        host = (parts.hostname or "").lower()
        _ = parts.port
    except ValueError:
        return [*problems, "notify.grafana.url: is not a valid URL"]
    insecure_ok = channel.allow_insecure_localhost and host in _LOOPBACK and parts.scheme == "http"
    if not (parts.scheme == "https" and host) and not insecure_ok:
        hint = " (http://127.0.0.1 needs allow_insecure_localhost: true)" if host in _LOOPBACK else ""
        problems.append(f"notify.grafana.url: expected an https:// URL{hint}")
    return problems


def url_problems(channel: ChannelSettings, url: Secret, what: str) -> list[str]:
    """Shape checks; each message describes the expectation, not the value."""
    raw = url.reveal()
    if any(ch.isspace() or ord(ch) < 32 for ch in raw):
        return [f"{what}: contains whitespace or control characters (one URL per file/variable)"]
    try:
        parts = urlsplit(raw)
        host = (parts.hostname or "").lower()
        _ = parts.port  # raises on a malformed port
    except ValueError:
        return [f"{what}: is not a valid URL"]
    if channel.allow_insecure_localhost and host in _LOOPBACK and parts.scheme in ("http", "https"):
        return []
    if channel.kind == "slack":
        ok = parts.scheme == "https" and host in _SLACK_HOSTS and parts.path.startswith("/services/")
        expected = "an https://hooks.slack.com/services/... URL"
    elif channel.kind == "alertmanager":
        # Alertmanager often listens in-cluster without TLS; credentials only ever go over https.
        plain_ok = parts.scheme == "http" and not (parts.username or parts.password)
        ok = bool(host) and (parts.scheme == "https" or plain_ok) and not parts.query
        expected = "Alertmanager's base URL (https://, or http:// without credentials; no query)"
    else:
        ok = parts.scheme == "https" and bool(host)
        expected = "an https:// URL"
    if ok:
        return []
    hint = " (http://127.0.0.1 needs allow_insecure_localhost: true)" if host in _LOOPBACK else ""
    return [f"{what} is not {expected}{hint}"]
