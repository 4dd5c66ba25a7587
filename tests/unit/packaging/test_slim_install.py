"""The default install is the agent's: every declared dependency is imported, the extras are not.

The agent's commands run with pandas, matplotlib and grafana-client made
unimportable; pyproject's extras are the ones ``acceptmon/extras.py`` names.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

import acceptmon
from acceptmon import extras

PACKAGE = Path(acceptmon.__file__).parent
PYPROJECT = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())["project"]
DEMO = str(PACKAGE / "apps" / "demo" / "data" / "demo-eagle3-incident.log")


def _name(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9._-]+", requirement)
    assert match, requirement
    return match.group(0).lower().replace("_", "-")


def _imported_top_levels() -> set[str]:
    found: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.add(node.module.split(".")[0])
    return found


def test_every_default_dependency_is_imported() -> None:
    by_dist: dict[str, set[str]] = {}
    for module, dists in packages_distributions().items():
        for dist in dists:
            by_dist.setdefault(dist.lower().replace("_", "-"), set()).add(module)
    imported = _imported_top_levels()
    for requirement in PYPROJECT["dependencies"]:
        dist = _name(requirement)
        assert by_dist.get(dist, set()) & imported, f"{dist} is declared but acceptmon never imports it"


def test_extras_are_the_ones_the_messages_name() -> None:
    optional = PYPROJECT["optional-dependencies"]
    for extra, (_module, package) in extras.EXTRAS.items():
        assert [_name(r) for r in optional[extra]] == [package]
        assert package not in {_name(r) for r in PYPROJECT["dependencies"]}
    assert optional["all"] == [f"acceptmon[{','.join(extras.EXTRAS)}]"]
    assert "acceptmon[all]" in optional["dev"]  # the tests cover every command


_AGENT_WITHOUT_EXTRAS = """
import sys
for name in ("pandas", "numpy", "matplotlib", "grafana_client", "scipy"):
    sys.modules[name] = None
from acceptmon import cli
from acceptmon.apps.agent import daemon  # noqa: F401 - `acceptmon run`
for argv in (
    ["oneshot", DEMO],
    ["runs", DEMO],
    ["check-config", CONFIG],
    ["run", "--help"],
    ["backfill", "--help"],
    ["notify-test", "--help"],
):
    try:
        code = cli.main(argv)
    except SystemExit as exc:  # --help
        code = exc.code
    assert code in (0, 3), (argv, code)
"""


def test_agent_commands_run_without_any_extra(tmp_path: Path) -> None:
    config = tmp_path / "acceptmon.yaml"
    config.write_text(f"sources:\n  - path: {DEMO}\n")
    done = subprocess.run(
        [sys.executable, "-c", f"DEMO = {DEMO!r}\nCONFIG = {str(config)!r}\n" + _AGENT_WITHOUT_EXTRAS],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr


def test_license_is_apache_and_packaged() -> None:
    assert PYPROJECT["license"] == "Apache-2.0"
    assert PYPROJECT["license-files"] == ["LICENSE"]  # into the wheel's dist-info and the sdist
    text = (PACKAGE.parent / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text
