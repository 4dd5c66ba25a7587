"""Config files may hold values strict JSON cannot (NaN, Infinity, YAML dates): stored as strings,
so a checkpoint holding them reads back by ``acceptmon.statefiles.strict``'s rule instead of being discarded."""

from __future__ import annotations

from pathlib import Path

from acceptmon.model import ConfigSnapshot
from acceptmon.runs.draft_config import parse_config
from acceptmon.runs.watched_files import read_content
from acceptmon.statefiles.strict import check


def test_non_finite_numbers_in_a_draft_config_become_their_names() -> None:
    parsed = parse_config(
        b'{"rope_theta": NaN, "max": Infinity, "min": -Infinity, "n": [1.5, NaN]}', "c.json"
    )
    assert parsed == {"rope_theta": "nan", "max": "inf", "min": "-inf", "n": [1.5, "nan"]}
    check(ConfigSnapshot(server_args={}, draft_config=parsed))


def test_yaml_dates_and_infinities_in_a_watched_file_become_strings(tmp_path: Path) -> None:
    path = tmp_path / "w.yaml"
    path.write_text("released: 2026-01-02\nlimit: .inf\n3: three\n")
    content = read_content(str(path))
    assert content == {"released": "2026-01-02", "limit": "inf", "3": "three"}
    check(ConfigSnapshot(server_args={}, watched={str(path): content}))
