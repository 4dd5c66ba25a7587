"""YAML (or command-line flags) → one frozen ``Config``; every problem at once.

Invalid configuration is the only fatal error in acceptmon, so it is
reported whole: an operator fixing a config file should not have to
restart five times to find five typos.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

DEFAULT_LISTEN = "127.0.0.1:9469"
DEFAULT_STATE_DIR = "/var/lib/acceptmon"

_TOP_KEYS = {
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
}
_SOURCE_KEYS = {
    "path",
    "name",
    "read_from_beginning",
    "known_hosts",
    "ssh_config",
    "identity_file",
    "accept_unknown_host_key",
    "poll_interval",
    "timezone",
    "host",
    "labels",
}


class ConfigError(ValueError):
    """Every problem found in a configuration, one per line."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("invalid configuration:\n" + "\n".join(f"  - {p}" for p in problems))


@dataclass(frozen=True, slots=True)
class SourceConfig:
    """One log source: a path or glob, ``-``, ``journald:UNIT`` or ``ssh://…``."""

    path: str
    name: str
    read_from_beginning: bool = True
    options: tuple[tuple[str, Any], ...] = ()

    @property
    def kind(self) -> str:
        if self.path == "-":
            return "stdin"
        if self.path.startswith("journald:"):
            return "journald"
        if self.path.startswith("ssh://"):
            return "ssh"
        return "file"

    def option(self, key: str, default: Any = None) -> Any:
        return dict(self.options).get(key, default)


@dataclass(frozen=True, slots=True)
class Config:
    listen: str = DEFAULT_LISTEN
    state_dir: str = DEFAULT_STATE_DIR
    poll_interval: float = 0.25
    checkpoint_interval: float = 5.0
    sources: tuple[SourceConfig, ...] = ()
    read_draft_config: bool = True
    watch_files: tuple[str, ...] = ()
    detect: Mapping[str, Any] = field(default_factory=dict)
    notify: Mapping[str, Any] = field(default_factory=dict)

    def listen_addr(self) -> tuple[str, int]:
        host, _, port = self.listen.rpartition(":")
        return host.strip("[]") or "0.0.0.0", int(port)


def _number(raw: Mapping[str, Any], key: str, default: float, problems: list[str], where: str) -> float:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        problems.append(f"{where}{key}: expected a positive number of seconds, got {value!r}")
        return default
    return float(value)


def _source(item: Any, i: int, default_begin: bool, problems: list[str]) -> SourceConfig | None:
    where = f"sources[{i}]"
    if isinstance(item, str):
        item = {"path": item}
    if not isinstance(item, Mapping):
        problems.append(f"{where}: expected a path or a mapping with 'path', got {type(item).__name__}")
        return None
    unknown = sorted(set(item) - _SOURCE_KEYS)
    if unknown:
        problems.append(
            f"{where}: unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(_SOURCE_KEYS))})"
        )
    path = item.get("path")
    if not isinstance(path, str) or not path.strip():
        problems.append(
            f"{where}.path: required, a file path or glob, '-', 'journald:UNIT' or 'ssh://host/path'"
        )
        return None
    if path.startswith("ssh://") and "/" not in path[len("ssh://") :]:
        problems.append(
            f"{where}.path: ssh source needs an absolute remote path: ssh://[user@]host[:port]/path"
        )
    if path.startswith("journald:") and not path[len("journald:") :]:
        problems.append(f"{where}.path: journald source needs a unit: journald:sglang.service")
    begin = item.get("read_from_beginning", default_begin)
    if not isinstance(begin, bool):
        problems.append(f"{where}.read_from_beginning: expected true or false")
        begin = default_begin
    name = item.get("name", path)
    if not isinstance(name, str) or not name:
        problems.append(f"{where}.name: expected a non-empty string")
        name = path
    _source_identity(item, where, problems)
    options = tuple(
        sorted(
            (k, tuple(sorted(v.items())) if k == "labels" and isinstance(v, Mapping) else v)
            for k, v in item.items()
            if k not in {"path", "name", "read_from_beginning"}
        )
    )
    return SourceConfig(path=path, name=name, read_from_beginning=begin, options=options)


def _source_identity(item: Mapping[str, Any], where: str, problems: list[str]) -> None:
    """``timezone`` (an IANA name), ``host`` and ``labels`` (what alerts say about the source)."""
    from acceptmon.labels import label_problems
    from acceptmon.log_time import zone

    tz = item.get("timezone")
    if tz is not None:
        if not isinstance(tz, str) or not tz:
            problems.append(f"{where}.timezone: expected an IANA zone name such as Europe/Berlin")
        else:
            try:
                zone(tz)
            except ValueError as exc:
                problems.append(f"{where}.timezone: {exc}")
    host = item.get("host")
    if host is not None and (not isinstance(host, str) or not host.strip()):
        problems.append(f"{where}.host: expected a non-empty string")
    if "labels" in item:
        problems.extend(f"{where}.labels: {p}" for p in label_problems(item["labels"]))


def from_mapping(raw: Mapping[str, Any], extra_sources: list[str] | None = None) -> Config:
    problems: list[str] = []
    unknown = sorted(set(raw) - _TOP_KEYS)
    if unknown:
        problems.append(
            f"unknown top-level key(s) {', '.join(unknown)} (known: {', '.join(sorted(_TOP_KEYS))})"
        )
    listen = str(raw.get("listen", DEFAULT_LISTEN))
    _host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        problems.append(f"listen: expected HOST:PORT, got {listen!r}")
    begin = raw.get("read_from_beginning", True)
    if not isinstance(begin, bool):
        problems.append("read_from_beginning: expected true or false")
        begin = True
    items = raw.get("sources") or []
    if not isinstance(items, list):
        problems.append("sources: expected a list")
        items = []
    sources = [_source(item, i, begin, problems) for i, item in enumerate([*items, *(extra_sources or [])])]
    kept = tuple(s for s in sources if s is not None)
    names = [s.name for s in kept]
    for dup in sorted({n for n in names if names.count(n) > 1}):
        problems.append(f"sources: the name {dup!r} is used twice; names become the 'source' label")
    if sum(s.kind == "stdin" for s in kept) > 1:
        problems.append("sources: standard input ('-') can be read only once")
    watch = raw.get("watch_files") or []
    if not isinstance(watch, list) or not all(isinstance(w, str) for w in watch):
        problems.append("watch_files: expected a list of file paths")
        watch = []
    for section in ("detect", "notify"):
        if not isinstance(raw.get(section) or {}, Mapping):
            problems.append(f"{section}: expected a mapping")
    config = Config(
        listen=listen,
        state_dir=str(raw.get("state_dir", DEFAULT_STATE_DIR)),
        poll_interval=_number(raw, "poll_interval", 0.25, problems, ""),
        checkpoint_interval=_number(raw, "checkpoint_interval", 5.0, problems, ""),
        sources=kept,
        read_draft_config=bool(raw.get("read_draft_config", True)),
        watch_files=tuple(watch),
        detect=dict(raw.get("detect") or {}),
        notify=dict(raw.get("notify") or {}),
    )
    problems += _section_problems(config)
    if problems:
        raise ConfigError(problems)
    return config


def _section_problems(config: Config) -> list[str]:
    """Problems of the sections other modules own (they validate themselves)."""
    problems: list[str] = []
    from acceptmon.detect import DetectConfig

    try:
        DetectConfig.from_dict(config.detect)
    except ValueError as exc:
        problems += [line.strip(" -") for line in str(exc).splitlines()[1:] if line.strip()]
    if config.notify:
        from acceptmon.notify import check_notify_config

        problems += check_notify_config(config.notify)
    return problems


def load(
    path: str | None, extra_sources: list[str] | None = None, overrides: Mapping[str, Any] | None = None
) -> Config:
    """Read ``path`` (if any), add command-line sources and flags, validate."""
    raw: Any = {}
    if path:
        try:
            raw = yaml.safe_load(Path(path).read_text()) or {}
        except OSError as exc:
            raise ConfigError([f"{path}: cannot read: {exc.strerror or exc}"]) from None
        except yaml.YAMLError as exc:
            raise ConfigError([f"{path}: not valid YAML: {exc}"]) from None
        if not isinstance(raw, Mapping):
            raise ConfigError([f"{path}: expected a mapping at the top level"])
    merged = {**raw, **{k: v for k, v in (overrides or {}).items() if v is not None}}
    return from_mapping(merged, extra_sources)
