"""No settings file of any shape gets past the loader as anything but a ``SettingsError``,
and whatever it accepts builds: the agent's stages and every source, without a network.

Documents are random trees (mappings, lists, scalars) whose keys are mostly the
real key names of every level, so they reach deep into each section's checks,
plus undecodable bytes and free text as the whole file.
"""

from __future__ import annotations

import io
import os
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acceptmon.apps.agent.agent import Agent
from acceptmon.clock import ManualClock
from acceptmon.detect import DetectSettings
from acceptmon.notify import build_notifier
from acceptmon.settings import TOP_KEYS, SettingsError, load
from acceptmon.settings.sources import SOURCE_KEYS
from acceptmon.sources import open_source

EXAMPLES = 1500
TMP = Path(tempfile.mkdtemp(prefix="acceptmon-fuzz-"))
FILES = {name: TMP / name for name in ("id_test", "known_hosts", "ssh_config", "watched.yaml")}
for _path in FILES.values():
    _path.write_text("Host gpu*\n  User ops\n" if _path.name == "ssh_config" else "")
HOOK_ENV = "ACCEPTMON_FUZZ_HOOK"

DETECT_KEYS = {f.name for f in fields(DetectSettings)} - {"source_floors", "model_floors", "floor"}
KEYS = sorted(
    TOP_KEYS
    | SOURCE_KEYS
    | DETECT_KEYS
    | {"floors", "accept_len", "accept_rate", "models"}
    | {"slack", "webhook", "webhook_url_env", "webhook_url_file", "url_env", "url_file"}
    | {"allow_insecure_localhost", "min_interval_s", "renotify_s", "max_queue", "timeout_s"}
    | {"retry_base_s", "retry_max_s", "links", "grafana", "runbook", "window_s"}
)
TEMPLATES = ["https://grafana.example/d/x?from={from_ms}&to={to_ms}", "https://x/{nope}", "{"]
#: Values that pass some checks, so that whole documents are accepted now and then.
MEANINGFUL = [
    "127.0.0.1:9469",
    "[::1]:9469",
    ":0",
    "host:65536",
    str(TMP / "state"),
    str(TMP / "a.log"),
    str(TMP / "*.log"),
    "-",
    "journald:sglang.service",
    "journald:",
    "ssh://gpu7/var/log/sglang.log",
    "ssh://ops@[::1]:2222/var/log/*.log",
    "ssh://[::1/var/log/x.log",
    "ssh:/gpu7/var/log/x.log",
    "ssh://gpu7:0/x",
    "ssh://gpu7:ssh/x",
    "ssh://gpu7",
    "ssh://gpu7/~/x.log",
    HOOK_ENV,
    *TEMPLATES,
    "no",
    *(str(p) for p in FILES.values()),
]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(10**400), max_value=10**400),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(MEANINGFUL),
)
keys = st.one_of(st.sampled_from(KEYS), st.sampled_from(KEYS), st.text(max_size=8), st.integers(), st.none())
trees = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=6)),
    max_leaves=30,
)


def _source_item() -> st.SearchStrategy[Any]:
    """A source as the loader may accept it: a path and some of its real keys."""
    return st.one_of(
        st.sampled_from(MEANINGFUL),
        st.fixed_dictionaries(
            {"path": st.sampled_from(MEANINGFUL)},
            optional={k: st.one_of(scalars, trees) for k in sorted(SOURCE_KEYS - {"path"})},
        ),
    )


#: Mostly well-formed top levels with random values, so that the deeper checks run.
documents = st.one_of(
    trees,
    st.fixed_dictionaries(
        {},
        optional={
            **{k: st.one_of(scalars, trees) for k in sorted(TOP_KEYS)},
            "sources": st.lists(_source_item(), max_size=3),
            "detect": st.dictionaries(st.sampled_from(KEYS), st.one_of(scalars, trees), max_size=4),
            "notify": st.dictionaries(
                st.sampled_from(["slack", "webhook", "state_dir"]),
                st.one_of(
                    trees,
                    st.dictionaries(st.sampled_from(KEYS), st.one_of(scalars, trees), max_size=5),
                ),
                max_size=2,
            ),
        },
    ),
)


def _mostly(good: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """A valid value seven times in eight, anything otherwise."""
    return st.integers(0, 7).flatmap(lambda i: scalars if i == 0 else good)


seconds = st.floats(min_value=0.01, max_value=1000)
common = {"name": _mostly(st.text(min_size=1, max_size=6)), "read_from_beginning": _mostly(st.booleans())}
local_source = st.fixed_dictionaries(
    {"path": st.sampled_from([str(TMP / "a.log"), str(TMP / "*.log"), "-", "journald:sglang.service"])},
    optional=common,
)
ssh_source = st.fixed_dictionaries(
    {"path": st.sampled_from(["ssh://gpu7/var/log/sglang.log", "ssh://ops@[::1]:2222/var/log/*.log"])},
    optional={
        **common,
        "identity_file": _mostly(st.just(str(FILES["id_test"]))),
        "known_hosts": _mostly(st.just(str(FILES["known_hosts"]))),
        "ssh_config": _mostly(st.just(str(FILES["ssh_config"]))),
        "accept_unknown_host_key": _mostly(st.booleans()),
        "poll_interval": _mostly(seconds),
    },
)
good_source = st.one_of(local_source, ssh_source)
detect_values = st.one_of(st.floats(min_value=0.0001, max_value=0.9999), st.integers(1, 400), seconds)
channel = st.fixed_dictionaries(
    {"webhook_url_env": _mostly(st.just(HOOK_ENV))},
    optional={
        "min_interval_s": _mostly(seconds),
        "renotify_s": _mostly(seconds),
        "max_queue": _mostly(st.integers(1, 100)),
        "links": _mostly(st.fixed_dictionaries({"grafana": st.sampled_from(TEMPLATES)})),
    },
)
#: Valid settings with a few values changed: these reach the building half of the property.
near_valid = st.fixed_dictionaries(
    {
        "state_dir": st.just(str(TMP / "state")),
        "sources": st.lists(good_source, min_size=1, max_size=3, unique_by=lambda s: s["path"]),
    },
    optional={
        "listen": _mostly(st.sampled_from(["127.0.0.1:9469", "[::1]:9469", ":9469"])),
        "poll_interval": _mostly(seconds),
        "checkpoint_interval": _mostly(seconds),
        "read_from_beginning": _mostly(st.booleans()),
        "read_draft_config": _mostly(st.booleans()),
        "watch_files": _mostly(st.lists(st.sampled_from([str(p) for p in FILES.values()]), max_size=2)),
        "detect": _mostly(st.dictionaries(st.sampled_from(sorted(DETECT_KEYS)), detect_values, max_size=2)),
        "notify": _mostly(st.fixed_dictionaries({}, optional={"slack": channel})),
    },
)
files = st.one_of(
    near_valid.map(lambda doc: yaml.safe_dump(doc, allow_unicode=True).encode()),
    near_valid.map(lambda doc: yaml.safe_dump(doc, allow_unicode=True).encode()),
    documents.map(lambda doc: yaml.safe_dump(doc, allow_unicode=True).encode()),
    st.binary(max_size=200),
    st.text(max_size=200).map(str.encode),
)

COUNTS = {"documents": 0, "accepted": 0}


@pytest.fixture(autouse=True, scope="module")
def _environment() -> Iterator[None]:
    """A webhook URL to resolve and a standard input that is a stream, not pytest's stand-in."""
    os.environ[HOOK_ENV] = "https://hooks.slack.com/services/T000/B000/fuzz"
    real_stdin = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO(b""))
    yield
    sys.stdin = real_stdin
    del os.environ[HOOK_ENV]
    print(f"\nsettings fuzz: {COUNTS['documents']} documents, {COUNTS['accepted']} accepted")


def _build_everything(path: Path) -> bool:
    try:
        cfg = load(str(path))
    except SettingsError as exc:
        assert exc.problems and all(isinstance(p, str) and p for p in exc.problems)
        return False
    agent = Agent(cfg, clock=ManualClock())
    for source_cfg in cfg.sources:
        open_source(source_cfg, agent.clock).close()
    if cfg.notify:
        build_notifier(cfg.notify, TMP / "notify")
    return True


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(files)
def test_any_settings_file_is_refused_cleanly_or_builds(data: bytes) -> None:
    path = TMP / "acceptmon.yaml"
    path.write_bytes(data)
    COUNTS["documents"] += 1
    COUNTS["accepted"] += _build_everything(path)


def test_the_generator_reaches_accepted_documents() -> None:
    """The property above is only worth something if some documents pass; this one must."""
    path = TMP / "ok.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "state_dir": str(TMP / "state"),
                "sources": [
                    {"path": "ssh://gpu7/var/log/sglang.log", **{k: str(FILES[k]) for k in ("ssh_config",)}},
                    {"path": str(TMP / "*.log"), "name": "glob"},
                    "-",
                ],
                "watch_files": [str(FILES["watched.yaml"])],
                "notify": {"slack": {"webhook_url_env": HOOK_ENV}},
            }
        )
    )
    assert _build_everything(path)
