"""Float sums the bulk path adds in one step where the record path adds line by line.

A batch's sums must be the very floats the per-line path makes (output is compared to the
bit). Whole numbers added one by one are exact while every partial sum stays an exact
float, and then one integer addition gives the same result at a fraction of the cost.
"""

from __future__ import annotations

#: Whole numbers up to here are exact floats.
EXACT = 2**53


def exact(total: float, n: int) -> bool:
    """Whether adding non-negative whole numbers that sum to ``n`` to ``total`` one by one in
    floats is exact: ``total`` is whole and every partial sum stays within ``EXACT``."""
    return n >= 0 and total.is_integer() and total >= 0.0 and int(total) + n <= EXACT
