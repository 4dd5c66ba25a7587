"""acceptmon's settings: YAML and command-line flags → one frozen ``Settings``, parsed once.

Each section is read exactly once per load, into the typed value its stage
uses (``DetectSettings``, ``NotifySettings``, ``WebSettings``, each source's
``SSHSettings``), and every problem of every section goes to one list
(``problems.Problems``), raised as one ``SettingsError``: an operator fixing
the file should not have to restart five times to find five typos. Everything
that can be checked without the network is checked here (types, ``ssh://``
URLs, that SSH key, known_hosts, webhook and certificate files are readable),
because ``check-config``, ``run`` and a SIGHUP reload all come through ``load``
and then use what it returned: what it accepts runs, what it refuses never does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from acceptmon.detect.settings import DetectSettings, parse_detect_settings
from acceptmon.notify.settings import NotifySettings
from acceptmon.settings.problems import Problems
from acceptmon.settings.sources import SourceSettings, parse_sources
from acceptmon.settings.web import WebSettings, read_web_settings
from acceptmon.text.suggest import shown

DEFAULT_LISTEN = "127.0.0.1:9469"
DEFAULT_STATE_DIR = "/var/lib/acceptmon"
#: Seconds between polls without a scrape or a rotation event: how late the detector and
#: alerts may see a line (a scrape sees every line at once), traded against CPU (at 10
#: lines/s without scrapes: about 0.45% of a core at 0.25 s, 0.2-0.3% at 0.5 s; docs/architecture.md).
DEFAULT_POLL_INTERVAL = 0.5
#: Sources whose per-source series /metrics exports (about 45 each; a glob's every file is
#: a source): a scrape of this many stays well under 1 s. The rest are read and counted.
DEFAULT_MAX_EXPORTED_SOURCES = 500

TOP_KEYS = {
    "listen",
    "state_dir",
    "poll_interval",
    "checkpoint_interval",
    "read_from_beginning",
    "sources",
    "detect",
    "notify",
    "watch_files",
    "read_draft_config",
    "web_config_file",
    "stall_after",
    "max_exported_sources",
}


class SettingsError(ValueError):
    """Every problem found in the settings, one per line: the one error a settings load raises."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        super().__init__("invalid settings:\n" + "\n".join(f"  - {p}" for p in problems))


@dataclass(frozen=True, slots=True)
class Settings:
    listen: str = DEFAULT_LISTEN
    state_dir: str = DEFAULT_STATE_DIR
    poll_interval: float = DEFAULT_POLL_INTERVAL
    checkpoint_interval: float = 5.0
    #: /healthz answers 503 when lines wait and ingestion has not advanced for this long.
    stall_after: float = 30.0
    sources: tuple[SourceSettings, ...] = ()
    read_draft_config: bool = True
    watch_files: tuple[str, ...] = ()
    detect: DetectSettings = field(default_factory=DetectSettings)
    #: None without a ``notify:`` section (or an empty one): no notifier runs.
    notify: NotifySettings | None = None
    web_config_file: str | None = None  # exporter-toolkit web config: TLS, basic auth
    #: The web config file as read at load time; None without ``web_config_file``.
    web: WebSettings | None = None
    #: The series budget (``metrics/budget.py``): sources beyond it are read, not exported.
    max_exported_sources: int = DEFAULT_MAX_EXPORTED_SOURCES

    def listen_addr(self) -> tuple[str, int]:
        host, _, port = self.listen.rpartition(":")
        return host.strip("[]") or "0.0.0.0", int(port)


def _count(raw: Mapping[str, Any], key: str, default: int, problems: Problems) -> int:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1_000_000:
        problems.append(f"{key}: expected a whole number from 1 to 1000000, got {shown(value)}")
        return default
    return value


def _listen(value: Any, problems: Problems) -> str:
    """``HOST:PORT``; an IPv6 host in brackets; an empty host means every address."""
    text = value if isinstance(value, str) else ""
    host, sep, port = text.rpartition(":")
    bracketed = host.startswith("[") and host.endswith("]") and len(host) > 2
    ok = (
        bool(sep)
        and port.isascii()
        and port.isdigit()
        and 0 <= int(port) <= 65535
        and (bracketed or not any(c in host for c in "[]:"))
        and not any(c.isspace() or c in "/@" for c in host)
    )
    if not ok:
        problems.append(
            f"listen: expected HOST:PORT with PORT from 0 (any free port) to 65535 (e.g. 127.0.0.1:9469, [::1]:9469), "
            f"got {shown(value)}"
        )
        return DEFAULT_LISTEN
    return text


def from_mapping(
    raw: Mapping[str, Any], extra_sources: list[str] | None = None, require_sources: bool = True
) -> Settings:
    """Parse every section of ``raw`` once; raise one ``SettingsError`` listing every problem."""
    problems = Problems()
    problems.unknown(raw, TOP_KEYS, "top level")
    listen = _listen(raw.get("listen", DEFAULT_LISTEN), problems)
    state_dir = raw.get("state_dir", DEFAULT_STATE_DIR)
    if not isinstance(state_dir, str) or not state_dir.strip() or "\x00" in state_dir:
        problems.append(f"state_dir: expected a directory path, got {shown(state_dir)}")
        state_dir = DEFAULT_STATE_DIR
    begin = problems.flag(raw, "read_from_beginning", True)
    items = raw.get("sources")
    if items is None:
        items = []
    if not isinstance(items, list):
        problems.append(f"sources: expected a list, got {type(items).__name__}")
        items = []
    sources = parse_sources([*items, *(extra_sources or [])], begin, require_sources, problems)
    watch = raw.get("watch_files")
    if watch is None:
        watch = []
    if not isinstance(watch, list) or not all(
        isinstance(w, str) and w.strip() and "\x00" not in w for w in watch
    ):
        problems.append(f"watch_files: expected a list of file paths, got {shown(watch)}")
        watch = []
    detect, notify = problems.mapping(raw, "detect"), problems.mapping(raw, "notify")
    poll = problems.seconds(raw, "poll_interval", DEFAULT_POLL_INTERVAL)
    checkpoint = problems.seconds(raw, "checkpoint_interval", 5.0)
    stall = problems.seconds(raw, "stall_after", 30.0)
    draft = problems.flag(raw, "read_draft_config", True)
    web_file, web = _web(raw.get("web_config_file"), problems)
    budget = _count(raw, "max_exported_sources", DEFAULT_MAX_EXPORTED_SOURCES, problems)
    settings = Settings(
        listen=listen,
        state_dir=state_dir,
        poll_interval=poll,
        checkpoint_interval=checkpoint,
        stall_after=stall,
        sources=sources,
        read_draft_config=draft,
        watch_files=tuple(watch),
        detect=parse_detect_settings(detect or {}, problems),
        notify=_notify(notify, problems) if notify else None,
        web_config_file=web_file,
        web=web,
        max_exported_sources=budget,
    )
    if problems:
        raise SettingsError(problems)
    return settings


def _web(value: Any, problems: Problems) -> tuple[str | None, WebSettings | None]:
    """The exporter-toolkit web config, read now, so check-config refuses a broken one."""
    if value is None:
        return None, None
    if not isinstance(value, str) or not value:
        problems.append("web_config_file: expected a file name")
        return None, None
    try:
        return value, read_web_settings(value, problems)
    except (ValueError, TypeError) as exc:  # e.g. a NUL inside a file name it names
        problems.append(f"web_config_file: {value!r} cannot be used ({type(exc).__name__})")
        return value, None


def _notify(section: Mapping[str, Any], problems: Problems) -> NotifySettings:
    """The ``notify:`` section, and whether each channel's secret can be read and looks right."""
    from acceptmon.notify.urls import parse_checked

    notify, found = parse_checked(section)
    problems += found
    return notify


def load(
    path: str | None,
    extra_sources: list[str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    require_sources: bool = True,
) -> Settings:
    """Read ``path`` (if any), add command-line sources and flags, and parse it all once.

    ``check-config``, ``run`` and a SIGHUP reload all come here, so what one
    accepts the others start; anything wrong is a ``SettingsError``, never a crash.
    """
    raw: Any = {}
    if path:
        try:
            raw = yaml.safe_load(Path(path).read_bytes())
        except OSError as exc:
            raise SettingsError([f"{path}: cannot read: {exc.strerror or exc}"]) from None
        except yaml.YAMLError as exc:
            raise SettingsError([f"{path}: not valid YAML: {exc}"]) from None
        except (ValueError, RecursionError, OverflowError) as exc:  # e.g. a date out of range
            raise SettingsError([f"{path}: not valid YAML: {type(exc).__name__}: {exc}"]) from None
        if raw is None:
            raw = {}
        if not isinstance(raw, Mapping):
            raise SettingsError([f"{path}: expected a mapping at the top level, got {type(raw).__name__}"])
    merged = {**raw, **{k: v for k, v in (overrides or {}).items() if v is not None}}
    return from_mapping(merged, extra_sources, require_sources)
