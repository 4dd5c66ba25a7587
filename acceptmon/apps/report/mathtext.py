"""Log-derived text for matplotlib, drawn as written.

matplotlib reads text between two ``$`` as math: a ``server_args`` key such
as ``$\\frac{a}{b}$`` would be typeset, and a malformed one (``$\\frac$``)
makes drawing the figure raise. Every log-derived string that reaches a plot
(annotations, legend entries, tick labels) goes through :func:`literal`.
"""

from __future__ import annotations


def literal(text: str) -> str:
    """``text`` with each ``$`` escaped, so matplotlib draws it as a dollar sign, not math."""
    return text.replace("$", r"\$")
