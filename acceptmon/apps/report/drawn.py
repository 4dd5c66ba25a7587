"""What the page is built from, without matplotlib: drawn plots, and calls made by name.

The report's process reads the logs and writes the page; its plots are drawn by a
child that imported matplotlib and numpy while the logs were read. So the work is
named (``Call``: a module and a function in it, imported where the call is made) and
its result is plain (``Plot``: names and PNG bytes): neither pulls matplotlib into
this process.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Plot:
    name: str
    title: str
    png: dict[str, bytes]  # theme → PNG bytes


@dataclass(frozen=True, slots=True)
class Call:
    """``module.function(*args)``, the module imported only when it is made (pickled by name)."""

    module: str
    function: str
    args: tuple[Any, ...] = ()

    def __call__(self) -> Any:
        return getattr(importlib.import_module(self.module), self.function)(*self.args)
