"""acceptmon's settings: YAML (or command-line flags) → one frozen ``Settings``; every problem at once.

Invalid settings are reported whole: an operator fixing the file should not
have to restart five times to find five typos. Everything that can be checked
without the network is checked here (types, ``ssh://`` URLs, that SSH key and
known_hosts files exist), because ``check-config``, ``run`` and a SIGHUP reload
all come through ``load``: what it accepts must build, what it refuses never runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from acceptmon.text.printable import printable
from acceptmon.text.suggest import shown, unknown_keys

DEFAULT_LISTEN = "127.0.0.1:9469"
DEFAULT_STATE_DIR = "/var/lib/acceptmon"
#: Seconds between polls without a scrape or a rotation event: how late the detector and
#: alerts may see a line (a scrape sees every line at once), traded against CPU (at 10
#: lines/s without scrapes: about 0.45% of a core at 0.25 s, 0.2-0.3% at 0.5 s; docs/architecture.md).
DEFAULT_POLL_INTERVAL = 0.5
#: Sources whose per-source series /metrics exports (about 45 each; a glob's every file is
#: a source): a scrape of this many stays well under 1 s. The rest are read and counted.
DEFAULT_MAX_EXPORTED_SOURCES = 500

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
    "web_config_file",
    "stall_after",
    "max_exported_sources",
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
    "hf_home",
    "speculative",
}
#: ``speculative:`` keys, for a log whose start line acceptmon never saw (rotated away, --from-end).
SPECULATIVE_KEYS = ("num_steps", "num_draft_tokens", "topk")


class SettingsError(ValueError):
    """Every problem found in a configuration, one per line."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("invalid settings:\n" + "\n".join(f"  - {p}" for p in problems))


@dataclass(frozen=True, slots=True)
class SourceSettings:
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

    def speculative(self) -> dict[str, int]:
        """The declared speculative settings (``speculative:``), for runs without a start line."""
        return dict(self.option("speculative", ()))


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
    detect: Mapping[str, Any] = field(default_factory=dict)
    notify: Mapping[str, Any] = field(default_factory=dict)
    web_config_file: str | None = None  # exporter-toolkit web config: TLS, basic auth
    #: The series budget (``metrics/budget.py``): sources beyond it are read, not exported.
    max_exported_sources: int = DEFAULT_MAX_EXPORTED_SOURCES

    def listen_addr(self) -> tuple[str, int]:
        host, _, port = self.listen.rpartition(":")
        return host.strip("[]") or "0.0.0.0", int(port)


#: Per-source keys only ``ssh://`` sources read (``sources/ssh/options.py`` checks them).
_SSH_KEYS = {"known_hosts", "ssh_config", "identity_file", "accept_unknown_host_key", "poll_interval"}


def _number(raw: Mapping[str, Any], key: str, default: float, problems: list[str], where: str) -> float:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 1e9:  # NaN fails too
        problems.append(f"{where}{key}: expected a positive number of seconds, got {shown(value)}")
        return default
    return float(value)


def _count(raw: Mapping[str, Any], key: str, default: int, problems: list[str]) -> int:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1_000_000:
        problems.append(f"{key}: expected a whole number from 1 to 1000000, got {shown(value)}")
        return default
    return value


def _bool(raw: Mapping[str, Any], key: str, default: bool, problems: list[str], where: str) -> bool:
    value = raw.get(key, default)
    if not isinstance(value, bool):
        problems.append(f"{where}{key}: expected true or false (a YAML bool), got {shown(value)}")
        return default
    return value


def _listen(value: Any, problems: list[str]) -> str:
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


def _path_problem(path: str) -> str | None:
    """What is wrong with a source path that the kinds themselves do not catch."""
    if path.lower().startswith("ssh:") and not path.startswith("ssh://"):
        return (
            f"{path!r} is not an ssh:// URL: write ssh://[user@]host[:port]/absolute/path "
            "(a local file named like this: ./" + path + ")"
        )
    if path.startswith("journald:") and not path[len("journald:") :].strip():
        return "journald source needs a unit: journald:sglang.service"
    if "\x00" in path:
        return "contains a NUL character"
    return None


def _source(item: Any, i: int, default_begin: bool, problems: list[str]) -> SourceSettings | None:
    where = f"sources[{i}]"
    if isinstance(item, str):
        item = {"path": item}
    if not isinstance(item, Mapping):
        problems.append(f"{where}: expected a path or a mapping with 'path', got {type(item).__name__}")
        return None
    problems += unknown_keys(item, _SOURCE_KEYS, where)
    path = item.get("path")
    if not isinstance(path, str) or not path.strip():
        problems.append(
            f"{where}.path: required, a file path or glob, '-', 'journald:UNIT' or 'ssh://host/path'"
        )
        return None
    before = len(problems)
    wrong = _path_problem(path)
    if wrong:
        problems.append(f"{where}.path: {wrong}")
    begin = _bool(item, "read_from_beginning", default_begin, problems, f"{where}.")
    name = item.get("name", path)
    if not isinstance(name, str) or not name.strip():
        problems.append(f"{where}.name: expected a non-empty string, got {shown(name)}")
        name = path
    name = printable(name)  # the 'source' label: a path's undecodable bytes and controls escaped
    _source_identity(item, where, problems)
    options = tuple(
        sorted(
            (
                k,
                tuple(sorted(v.items(), key=lambda kv: str(kv[0])))
                if k in ("labels", "speculative") and isinstance(v, Mapping)
                else v,
            )
            for k, v in item.items()
            if isinstance(k, str) and k in _SOURCE_KEYS - {"path", "name", "read_from_beginning"}
        )
    )
    source = SourceSettings(path=path, name=name, read_from_beginning=begin, options=options)
    if source.kind == "ssh":
        from acceptmon.sources.ssh.options import check_source

        problems += check_source(path, dict(options), f"{where}.")
    else:
        problems += [f"{where}.{k}: only ssh:// sources use it" for k, _ in options if k in _SSH_KEYS]
    return source if len(problems) == before else None


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
    _source_draft(item, where, problems)


def _source_draft(item: Mapping[str, Any], where: str, problems: list[str]) -> None:
    """``hf_home`` (where the Hugging Face cache of draft models is) and ``speculative``."""
    hf = item.get("hf_home")
    if hf is not None and (not isinstance(hf, str) or not hf.strip() or "\x00" in hf):
        problems.append(
            f"{where}.hf_home: expected a directory path (HF_HOME on the log's host), got {shown(hf)}"
        )
    spec = item.get("speculative")
    if spec is None:
        return
    if not isinstance(spec, Mapping):
        problems.append(
            f"{where}.speculative: expected a mapping of {', '.join(SPECULATIVE_KEYS)}, got {shown(spec)}"
        )
        return
    problems += unknown_keys(spec, set(SPECULATIVE_KEYS), f"{where}.speculative")
    for key in SPECULATIVE_KEYS:
        value = spec.get(key)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 64
        ):
            problems.append(
                f"{where}.speculative.{key}: expected a whole number from 1 to 64, got {shown(value)}"
            )


def from_mapping(
    raw: Mapping[str, Any], extra_sources: list[str] | None = None, require_sources: bool = True
) -> Settings:
    """Validate parsed settings; raise one ``SettingsError`` listing every problem."""
    problems = unknown_keys(raw, _TOP_KEYS, "top level")
    listen = _listen(raw.get("listen", DEFAULT_LISTEN), problems)
    state_dir = raw.get("state_dir", DEFAULT_STATE_DIR)
    if not isinstance(state_dir, str) or not state_dir.strip() or "\x00" in state_dir:
        problems.append(f"state_dir: expected a directory path, got {shown(state_dir)}")
        state_dir = DEFAULT_STATE_DIR
    begin = _bool(raw, "read_from_beginning", True, problems, "")
    items = raw.get("sources")
    if items is None:
        items = []
    if not isinstance(items, list):
        problems.append(f"sources: expected a list, got {type(items).__name__}")
        items = []
    sources = [_source(item, i, begin, problems) for i, item in enumerate([*items, *(extra_sources or [])])]
    kept = tuple(s for s in sources if s is not None)
    names = [s.name for s in kept]
    for dup in sorted({n for n in names if names.count(n) > 1}):
        problems.append(f"sources: the name {dup!r} is used twice; names become the 'source' label")
    if sum(s.kind == "stdin" for s in kept) > 1:
        problems.append("sources: standard input ('-') can be read only once")
    if require_sources and not items and not extra_sources:
        problems.append("no sources: name log files on the command line or under 'sources:'")
    watch = raw.get("watch_files")
    if watch is None:
        watch = []
    if not isinstance(watch, list) or not all(
        isinstance(w, str) and w.strip() and "\x00" not in w for w in watch
    ):
        problems.append(f"watch_files: expected a list of file paths, got {shown(watch)}")
        watch = []
    sections: dict[str, Mapping[str, Any]] = {}
    for section in ("detect", "notify"):
        value = raw.get(section)
        if value is not None and not isinstance(value, Mapping):
            problems.append(f"{section}: expected a mapping, got {type(value).__name__}")
        sections[section] = value if isinstance(value, Mapping) else {}
    config = Settings(
        listen=listen,
        state_dir=state_dir,
        poll_interval=_number(raw, "poll_interval", DEFAULT_POLL_INTERVAL, problems, ""),
        checkpoint_interval=_number(raw, "checkpoint_interval", 5.0, problems, ""),
        stall_after=_number(raw, "stall_after", 30.0, problems, ""),
        sources=kept,
        read_draft_config=_bool(raw, "read_draft_config", True, problems, ""),
        watch_files=tuple(watch),
        detect=dict(sections["detect"]),
        notify=dict(sections["notify"]),
        web_config_file=_web_config_file(raw.get("web_config_file"), problems),
        max_exported_sources=_count(raw, "max_exported_sources", DEFAULT_MAX_EXPORTED_SOURCES, problems),
    )
    problems += _section_problems(config)
    if problems:
        raise SettingsError(problems)
    return config


def _web_config_file(value: Any, problems: list[str]) -> str | None:
    """Validate the exporter-toolkit web config now, so check-config refuses a broken one."""
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        problems.append("web_config_file: expected a file name")
        return None
    from acceptmon.settings.web import WebSettingsError, load_web_settings

    try:
        load_web_settings(value)
    except WebSettingsError as exc:
        problems += exc.problems
    except (ValueError, TypeError) as exc:  # e.g. a NUL inside a file name it names
        problems.append(f"web_config_file: {value!r} cannot be used ({type(exc).__name__})")
    return value


def _section_problems(config: Settings) -> list[str]:
    """Problems of the sections other modules own (they validate themselves)."""
    problems: list[str] = []
    from acceptmon.detect import DetectSettings

    try:
        DetectSettings.from_dict(config.detect)
    except ValueError as exc:
        problems += [line.strip(" -") for line in str(exc).splitlines()[1:] if line.strip()]
    if config.notify:
        from acceptmon.notify import check_notify_config

        problems += check_notify_config(config.notify)
    return problems


def load(
    path: str | None,
    extra_sources: list[str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    require_sources: bool = True,
) -> Settings:
    """Read ``path`` (if any), add command-line sources and flags, validate.

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
