"""The ``sources:`` list → one ``SourceSettings`` per log, each kind's keys read once.

A source is a path or glob, ``-``, ``journald:UNIT``, ``ssh://…``, ``kubernetes:[ROOT]``
or ``docker:[ROOT]``. The keys
every kind shares (name, timezone, host, labels, draft discovery) are read here;
an ``ssh://`` source's own keys by ``sources.ssh.options.parse_ssh_source``, whose
``SSHSettings`` the source carries to the factory (no second read there).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from acceptmon.runs.declared import SPECULATIVE_KEYS
from acceptmon.settings.containers import CONTAINER_KEYS, check_container_keys, is_container_path
from acceptmon.settings.problems import Problems
from acceptmon.text.printable import printable
from acceptmon.text.suggest import shown

if TYPE_CHECKING:  # paramiko is imported only when a source is ssh://
    from acceptmon.sources.ssh.options import SSHSettings

SOURCE_KEYS = {
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
} | CONTAINER_KEYS
#: Per-source keys only ``ssh://`` sources read.
_SSH_KEYS = {"known_hosts", "ssh_config", "identity_file", "accept_unknown_host_key", "poll_interval"}


@dataclass(frozen=True, slots=True)
class SourceSettings:
    """One log source: a path or glob, ``-``, ``journald:UNIT``, ``ssh://…``, ``kubernetes:[ROOT]``
    or ``docker:[ROOT]`` (``kind`` tells which)."""

    path: str
    name: str
    read_from_beginning: bool = True
    options: tuple[tuple[str, Any], ...] = ()
    #: An ``ssh://`` source's connection settings, as the loader read them; None for other kinds.
    ssh: SSHSettings | None = None

    @property
    def kind(self) -> str:
        if self.path == "-":
            return "stdin"
        if self.path.startswith("journald:"):
            return "journald"
        if self.path.startswith("ssh://"):
            return "ssh"
        if is_container_path(self.path):
            return self.path.partition(":")[0]
        return "file"

    def option(self, key: str, default: Any = None) -> Any:
        return dict(self.options).get(key, default)

    def speculative(self) -> dict[str, int]:
        """The declared speculative settings (``speculative:``), for runs without a start line."""
        return dict(self.option("speculative", ()))


def parse_sources(
    items: list[Any], default_begin: bool, require: bool, problems: Problems
) -> tuple[SourceSettings, ...]:
    """Every source that reads without a problem; the list's own problems (duplicate names,
    ``-`` twice, none at all when ``require``) after those of its items."""
    sources = [_source(item, i, default_begin, problems) for i, item in enumerate(items)]
    kept = tuple(s for s in sources if s is not None)
    names = [s.name for s in kept]
    for dup in sorted({n for n in names if names.count(n) > 1}):
        problems.append(f"sources: the name {dup!r} is used twice; names become the 'source' label")
    if sum(s.kind == "stdin" for s in kept) > 1:
        problems.append("sources: standard input ('-') can be read only once")
    if require and not items:
        problems.append("no sources: name log files on the command line or under 'sources:'")
    return kept


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


def _source(item: Any, i: int, default_begin: bool, problems: Problems) -> SourceSettings | None:
    where = f"sources[{i}]"
    if isinstance(item, str):
        item = {"path": item}
    if not isinstance(item, Mapping):
        problems.append(f"{where}: expected a path or a mapping with 'path', got {type(item).__name__}")
        return None
    problems.unknown(item, SOURCE_KEYS, where)
    path = item.get("path")
    if not isinstance(path, str) or not path.strip():
        problems.append(
            f"{where}.path: required, a file path or glob, '-', 'journald:UNIT', 'ssh://host/path', "
            "'kubernetes:[ROOT]' or 'docker:[ROOT]'"
        )
        return None
    before = len(problems)
    wrong = _path_problem(path)
    if wrong:
        problems.append(f"{where}.path: {wrong}")
    begin = problems.flag(item, "read_from_beginning", default_begin, f"{where}.")
    name = item.get("name", path)
    if not isinstance(name, str) or not name.strip():
        problems.append(f"{where}.name: expected a non-empty string, got {shown(name)}")
        name = path
    name = printable(name)  # the 'source' label: a path's undecodable bytes and controls escaped
    _source_identity(item, where, problems)
    check_container_keys(item, where, problems)
    options = tuple(
        sorted(
            (
                k,
                tuple(sorted(v.items(), key=lambda kv: str(kv[0])))
                if k in ("labels", "speculative", "path_map") and isinstance(v, Mapping)
                else tuple(v)
                if isinstance(v, list)
                else v,
            )
            for k, v in item.items()
            if isinstance(k, str) and k in SOURCE_KEYS - {"path", "name", "read_from_beginning"}
        )
    )
    ssh = None
    if path.startswith("ssh://"):
        from acceptmon.sources.ssh.options import parse_ssh_source

        ssh = parse_ssh_source(path, dict(options), f"{where}.", problems)
    else:
        problems += [f"{where}.{k}: only ssh:// sources use it" for k, _ in options if k in _SSH_KEYS]
    if len(problems) > before:
        return None
    return SourceSettings(path=path, name=name, read_from_beginning=begin, options=options, ssh=ssh)


def _source_identity(item: Mapping[str, Any], where: str, problems: Problems) -> None:
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


def _source_draft(item: Mapping[str, Any], where: str, problems: Problems) -> None:
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
    problems.unknown(spec, set(SPECULATIVE_KEYS), f"{where}.speculative")
    for key in SPECULATIVE_KEYS:
        value = spec.get(key)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 64
        ):
            problems.append(
                f"{where}.speculative.{key}: expected a whole number from 1 to 64, got {shown(value)}"
            )
