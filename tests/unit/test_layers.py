"""The layout is the data flow: no import cycles, and no stage imports a stage above it.

``sources → parse → runs → metrics | detect → notify``, with the ingestion
core (``ingest``) over the stages, acceptmon's own ``settings`` over that and the
apps on top, apart: no app imports another (what two share moves down). Shared
vocabulary (``model``, ``clock``, ``log_time``, ``text``, ...) sits below everything.
Every ``import`` counts, including ones inside functions.
"""

from __future__ import annotations

import ast
from pathlib import Path

import acceptmon

PACKAGE = Path(acceptmon.__file__).parent

#: Layer of each top-level name under ``acceptmon``; a module may import its own layer or below.
LAYERS: dict[str, int] = {
    **dict.fromkeys(
        [
            "__init__",
            "model",
            "clock",
            "children",
            "log_time",
            "labels",
            "text",
            "statefiles",
            "testing",
            "extras",
        ],
        0,
    ),
    "sources": 1,
    "parse": 2,
    "runs": 3,
    "metrics": 4,
    "detect": 4,
    "notify": 5,
    "ingest": 6,
    "settings": 7,
    "apps": 8,
    **dict.fromkeys(["cli", "__main__"], 9),
}
#: Stages of one layer that must not know each other.
SIBLINGS = {frozenset({"metrics", "detect"})}


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """Modules of acceptmon that ``name`` imports (the longest known prefix of each)."""
    found = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, base]).strip(".")
            subs = [f"{base}.{a.name}" for a in node.names]
            targets = [t for t in subs if t in known] or [base]
            if len(targets) < len(subs):
                targets.append(base)
        for target in targets:
            t = target
            while t and t not in known:
                t = t.rpartition(".")[0]
            if t.startswith("acceptmon") and t != name:
                found.add(t)
    return found


def _top(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    known = set(mods)
    return {name: _imports(name, path, known) for name, path in mods.items()}


def test_every_module_has_a_layer() -> None:
    assert {_top(m) for m in _modules()} - LAYERS.keys() == set()


def test_no_stage_imports_a_stage_above_it() -> None:
    upward = []
    for name, deps in _graph().items():
        for dep in deps:
            a, b = _top(name), _top(dep)
            if a == b or name == "acceptmon" or dep == "acceptmon":
                continue
            if LAYERS[b] > LAYERS[a] or frozenset({a, b}) in SIBLINGS:
                upward.append(f"{name} → {dep}")
    assert sorted(upward) == []


def test_no_import_cycles() -> None:
    graph = _graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                on.discard(w)
                scc.append(w)
                if w == v:
                    break
            if len(scc) > 1:
                cycles.append(sorted(scc))

    for v in graph:
        if v not in index:
            visit(v)
    assert cycles == []


def _app(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "apps" else None


def test_no_app_imports_another_app() -> None:
    across = [
        f"{name} → {dep}"
        for name, deps in _graph().items()
        for dep in deps
        if _app(name) and _app(dep) and _app(name) != _app(dep)
    ]
    assert sorted(across) == []
