"""The ``notify:`` section of the YAML config → frozen ``NotifySettings``.

Every problem is collected and reported at once (invalid configuration is
the only fatal error), and no message ever quotes a webhook URL.

    notify:
      state_dir: /var/lib/acceptmon/notify      # optional; the CLI may pass one
      slack:
        webhook_url_env: ACCEPTMON_SLACK_WEBHOOK  # or webhook_url_file: /etc/...
        min_interval_s: 1.0
        renotify_s: 14400
        links: {grafana: "https://grafana/d/x?from={from_ms}&to={to_ms}", runbook: "..."}
      webhook:
        url_file: /etc/acceptmon/webhook-url
      grafana:                                  # annotations: run starts, config changes, findings
        url: https://grafana.example.com        # not a secret; the token is
        token_env: ACCEPTMON_GRAFANA_TOKEN        # or token_file: /etc/...
      alertmanager:                             # POST /api/v2/alerts, resent every renotify_s (60)
        url_env: ACCEPTMON_ALERTMANAGER_URL     # or url_file; the base URL, may hold basic auth
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from acceptmon.notify.links import template_problems
from acceptmon.text.redact import redact_text
from acceptmon.text.suggest import unknown_keys

Kind = Literal["slack", "webhook", "grafana", "alertmanager"]

#: Where each channel's secret comes from: the webhook URL, or Grafana's API token.
_URL_KEYS: dict[str, tuple[str, str]] = {
    "slack": ("webhook_url_env", "webhook_url_file"),
    "webhook": ("url_env", "url_file"),
    "grafana": ("token_env", "token_file"),
    "alertmanager": ("url_env", "url_file"),
}
#: Alertmanager wants firing alerts resent (as Prometheus does every minute) and takes them in bursts.
_ALERTMANAGER_DEFAULTS = {"renotify_s": 60.0, "min_interval_s": 0.0}
_NUMBERS: dict[str, tuple[type, float]] = {  # key -> (type, smallest allowed)
    "min_interval_s": (float, 0.0),
    "renotify_s": (float, 0.0),
    "max_queue": (int, 1),
    "timeout_s": (float, 0.001),
    "retry_base_s": (float, 0.001),
    "retry_max_s": (float, 0.001),
}
_LINK_KEYS = {"grafana", "runbook", "window_s"}


class NotifySettingsError(ValueError):
    """A notifier that cannot be built (a secret unreadable since the settings were loaded), or
    ``python -m acceptmon.notify``'s own read of the section; ``problems`` lists every one."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


@dataclass(frozen=True, slots=True)
class Links:
    """Link templates (see ``links.LINK_FIELDS``) and the Grafana window."""

    templates: tuple[tuple[str, str], ...] = ()
    window_s: float = 3600.0


@dataclass(frozen=True, slots=True)
class ChannelSettings:
    """One notifier: where to post and how politely."""

    kind: Kind
    url_env: str | None = None
    url_file: str | None = None
    allow_insecure_localhost: bool = False
    min_interval_s: float = 1.0
    renotify_s: float = 14400.0
    max_queue: int = 1000
    timeout_s: float = 10.0
    retry_base_s: float = 2.0
    retry_max_s: float = 300.0
    links: Links = field(default_factory=Links)
    #: Grafana only: the server's base URL (the token is the secret).
    base_url: str | None = None

    @property
    def name(self) -> str:
        return self.kind


@dataclass(frozen=True, slots=True)
class NotifySettings:
    slack: ChannelSettings | None = None
    webhook: ChannelSettings | None = None
    state_dir: str | None = None
    grafana: ChannelSettings | None = None
    alertmanager: ChannelSettings | None = None

    def channels(self) -> list[ChannelSettings]:
        return [c for c in (self.slack, self.webhook, self.grafana, self.alertmanager) if c is not None]


def parse_notify_settings(section: Any) -> NotifySettings:
    """The ``notify:`` value alone → ``NotifySettings``, for ``python -m acceptmon.notify``
    (acceptmon's own loader reads the section once, with ``parse_partial``)."""
    config, problems = _parse(section)
    if problems:
        raise NotifySettingsError(problems)
    return config


def parse_partial(section: Any) -> tuple[NotifySettings, list[str]]:
    """The config as far as it reads, and its structural problems (no environment or file access)."""
    return _parse(section)


def _parse(section: Any) -> tuple[NotifySettings, list[str]]:
    if section is None:
        return NotifySettings(), []
    if not isinstance(section, Mapping):
        return NotifySettings(), ["notify: must be a mapping"]
    kinds: tuple[Kind, ...] = ("slack", "webhook", "grafana", "alertmanager")
    problems = unknown_keys(section, (*kinds, "state_dir"), "notify")
    channels: dict[str, ChannelSettings | None] = {}
    for kind in kinds:
        raw = section.get(kind)
        channels[kind] = None if raw is None else _channel(kind, raw, problems)
    state_dir = section.get("state_dir")
    if state_dir is not None and not isinstance(state_dir, str):
        problems.append("notify.state_dir: must be a path string")
        state_dir = None
    parsed = NotifySettings(
        channels["slack"], channels["webhook"], state_dir, channels["grafana"], channels["alertmanager"]
    )
    return parsed, problems


def _channel(kind: Kind, raw: Any, problems: list[str]) -> ChannelSettings:
    where = f"notify.{kind}"
    if not isinstance(raw, Mapping):
        problems.append(f"{where}: must be a mapping")
        return ChannelSettings(kind)
    env_key, file_key = _URL_KEYS[kind]
    known = {
        env_key,
        file_key,
        "allow_insecure_localhost",
        "links",
        *_NUMBERS,
        *(("url",) if kind == "grafana" else ()),
    }
    problems.extend(unknown_keys(raw, known, where))
    url_env, url_file = _text(raw, env_key, where, problems), _text(raw, file_key, where, problems)
    pasted = _pasted_secret(url_env, f"{where}.{env_key}", problems, name=True)
    pasted |= _pasted_secret(url_file, f"{where}.{file_key}", problems, name=False)
    url_env, url_file = (None, None) if pasted else (url_env, url_file)
    if not pasted and (url_env is None) == (url_file is None):
        problems.append(f"{where}: set exactly one of {env_key} or {file_key}")
    insecure = raw.get("allow_insecure_localhost", False)
    if not isinstance(insecure, bool):
        problems.append(f"{where}.allow_insecure_localhost: must be true or false")
        insecure = False
    numbers = {k: _number(raw, k, where, problems) for k in _NUMBERS if k in raw}
    if kind == "alertmanager":
        numbers = {**_ALERTMANAGER_DEFAULTS, **numbers}
    links = _links(raw.get("links"), f"{where}.links", problems)
    base = _text(raw, "url", where, problems) if kind == "grafana" else None
    if kind == "grafana" and base is None and "url" not in raw:
        problems.append(f"{where}.url: required, Grafana's base URL (e.g. https://grafana.example.com)")
    return ChannelSettings(kind, url_env, url_file, insecure, links=links, base_url=base, **numbers)


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


def _pasted_secret(value: str | None, where: str, problems: list[str], name: bool) -> bool:
    """A webhook URL or token pasted where the NAME of a variable (or a file path) belongs: say
    so without echoing it, since every later message would quote it as the variable's name."""
    if value is None:
        return False
    if name and not _ENV_NAME.fullmatch(value):
        what = "the NAME of an environment variable (letters, digits and _)"
    elif "://" in value or redact_text(value) != value:
        what = "the NAME of what holds the secret (a variable, or a file path), not the secret itself"
    else:
        return False
    problems.append(f"{where}: expected {what}; the value given is not shown (it may be a URL or secret)")
    return True


def _text(raw: Mapping[str, Any], key: str, where: str, problems: list[str]) -> str | None:
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        problems.append(f"{where}.{key}: must be a non-empty string")
        return None
    return value.strip()


def _number(raw: Mapping[str, Any], key: str, where: str, problems: list[str]) -> Any:
    kind, smallest = _NUMBERS[key]
    value = raw[key]
    ok_type = isinstance(value, int) if kind is int else isinstance(value, int | float)
    if isinstance(value, bool) or not ok_type or not _finite(value) or value < smallest:
        noun = "whole number" if kind is int else "number"
        problems.append(f"{where}.{key}: must be a {noun} >= {smallest:g}")
        return ChannelSettings.__dataclass_fields__[key].default
    return kind(value)


def _links(raw: Any, where: str, problems: list[str]) -> Links:
    if raw is None:
        return Links()
    if not isinstance(raw, Mapping):
        problems.append(f"{where}: must be a mapping")
        return Links()
    problems.extend(unknown_keys(raw, _LINK_KEYS, where))
    templates = []
    for name in ("grafana", "runbook"):
        value = raw.get(name)
        if value is None:
            continue
        if not isinstance(value, str):
            problems.append(f"{where}.{name}: must be a string")
            continue
        problems.extend(template_problems(f"{where}.{name}", value))
        templates.append((name, value))
    window = raw.get("window_s", 3600.0)
    if isinstance(window, bool) or not isinstance(window, int | float) or not _finite(window) or window <= 0:
        problems.append(f"{where}.window_s: must be a number > 0")
        window = 3600.0
    return Links(tuple(templates), float(window))


def _finite(value: float) -> bool:
    """Finite, and small enough that ``float()`` of an integer does not overflow."""
    return abs(value) < 1e300 if isinstance(value, int) else math.isfinite(value)
