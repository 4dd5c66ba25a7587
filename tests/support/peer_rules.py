"""The peer recording rules the dashboard's fleet panels query: the shipped ones once they exist,
else a stand-in (``peer_rules.yml``), so the dashboard is tested before and after they merge."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.conftest import ROOT

SHIPPED = ROOT / "deploy" / "prometheus" / "acceptmon.rules.yml"
STAND_IN = Path(__file__).with_name("peer_rules.yml")


def _records(path: Path) -> set[str]:
    return {
        r["record"] for g in yaml.safe_load(path.read_text())["groups"] for r in g["rules"] if "record" in r
    }


def extra_rule_files() -> list[Path]:
    """The stand-in, unless the shipped rules already record every name it does."""
    return [] if _records(STAND_IN) <= _records(SHIPPED) else [STAND_IN]


def extra_records() -> set[str]:
    """Names the dashboard may query beyond the shipped rules' (the stand-in's, while needed)."""
    return set().union(*(_records(p) for p in extra_rule_files()))
