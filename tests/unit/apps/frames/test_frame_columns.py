"""read_log's columns built from codes and NumPy arrays equal those pandas builds from lists."""

from __future__ import annotations

from typing import Any

import pytest

pd = pytest.importorskip("pandas")

from acceptmon.apps.frames import _categorical, _ints  # noqa: E402


@pytest.mark.parametrize(
    "runs",
    [
        [("r1", 3), ("r2", 2), ("r10", 1), ("r1", 2)],
        [(None, 2), ("r1", 3), (None, 1)],
        [("a", 1)],
        [],
    ],
)
def test_categorical_from_runs_is_pandas_from_the_list(runs: list[tuple[Any, int]]) -> None:
    values = [v for v, n in runs for _ in range(n)]
    want = pd.Categorical(values)
    got = _categorical(runs)
    assert list(got.categories) == list(want.categories)
    assert got.tolist() == want.tolist()
    assert pd.isna(got).tolist() == pd.isna(want).tolist()


def test_categorical_with_fixed_categories() -> None:
    runs = [("sglang", 2), ("vllm", 1)]
    got = _categorical(runs, ["sglang", "vllm"])
    want = pd.Categorical(["sglang", "sglang", "vllm"], categories=["sglang", "vllm"])
    pd.testing.assert_extension_array_equal(pd.array(got), pd.array(want))


@pytest.mark.parametrize("values", [[1, 2, 3], [None, None], [1, None, 3], []])
def test_ints_are_pandas_int64_from_the_list(values: list[int | None]) -> None:
    pd.testing.assert_extension_array_equal(_ints(values), pd.array(values, dtype="Int64"))
