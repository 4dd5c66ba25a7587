"""A batch's cells read the same by row (a regex's ``findall``) and by column (a scout's).

The bulk path keeps a scout's columns as they come (``runs.batch.Cells``) where it used to
zip them into rows; every read of a batch (a column, the picked lines of one, one cell, a
part of the lines) must give the same from either.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from acceptmon.runs.batch import Cells

_ROWS = st.integers(min_value=1, max_value=4).flatmap(
    lambda k: st.lists(st.tuples(*[st.text("0123456789.", max_size=4)] * k), min_size=1, max_size=30)
)


@given(_ROWS, st.data())
def test_rows_and_columns_read_alike(rows: list[tuple[str, ...]], data: st.DataObject) -> None:
    by_row = Cells.of_rows(rows)
    by_column = Cells.of_columns([list(column) for column in zip(*rows, strict=True)])
    n, k = len(rows), len(rows[0])
    assert by_row.n == by_column.n == n
    picked = data.draw(st.lists(st.booleans(), min_size=n, max_size=n))
    i = data.draw(st.integers(0, n))
    j = data.draw(st.integers(i, n + 2))
    for g in range(k):
        assert by_row.column(g) == by_column.column(g)
        assert by_row.picked(g, picked) == by_column.picked(g, picked)
        assert [by_row.cell(r, g) for r in range(n)] == [by_column.cell(r, g) for r in range(n)]
        row_part, column_part = by_row.part(i, j), by_column.part(i, j)
        assert row_part.n == column_part.n == len(rows[i:j])
        assert row_part.column(g) == column_part.column(g) == [row[g] for row in rows[i:j]]
