"""Optional dependencies: the agent installs without them; a command that needs one names its extra.

``pip install acceptmon`` carries only what the agent imports, so a node or a
container does not pull pandas, matplotlib or grafana-client's HTTP stack.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

#: The exit status of a command whose extra is not installed.
EXIT = 2

#: Each extra (pyproject's optional-dependencies) → the module it brings and the package pip installs.
EXTRAS = {
    "frames": ("pandas", "pandas"),
    "report": ("matplotlib", "matplotlib"),
    "grafana": ("grafana_client", "grafana-client"),
}


class MissingExtra(ImportError):
    """``str()`` is the one line to show: what needs which package, and the install that brings it."""


def require(extra: str, what: str) -> ModuleType:
    """The extra's module, or ``MissingExtra`` (no chained traceback) if it is not installed."""
    module, _ = EXTRAS[extra]
    try:
        return importlib.import_module(module)
    except ImportError:
        raise _missing(extra, what) from None


def check(extra: str, what: str) -> None:
    """``require`` without the import, for a command whose import of the extra is made by
    another process (``report``: its drawing child)."""
    if importlib.util.find_spec(EXTRAS[extra][0]) is None:
        raise _missing(extra, what)


def _missing(extra: str, what: str) -> MissingExtra:
    module, package = EXTRAS[extra]
    return MissingExtra(f"{what} needs {package}: pip install 'acceptmon[{extra}]'", name=module)
