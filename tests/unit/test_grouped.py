"""Statistics per group on integer keys (reports/evidence/grouped.py) are pandas' groupby
figures to the bit: medians (NaN left out, the mean of the two middle values), minima,
maxima, integer sums, distinct counts, and the groups in key order."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from reports.evidence.grouped import Groups, codes

values = st.one_of(
    st.floats(-1e6, 1e6, allow_nan=False), st.just(float("nan")), st.sampled_from([0.5, 1.0, 2.0])
)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 3), st.integers(-2, 2), values, st.integers(0, 4)), min_size=1, max_size=60
    )
)
def test_group_figures_are_pandas_figures(rows: list[tuple[int, int, float, int]]) -> None:
    a, b = np.array([r[0] for r in rows]), np.array([r[1] for r in rows])
    v, w = np.array([r[2] for r in rows]), np.array([r[3] for r in rows])
    df = pd.DataFrame({"a": a, "b": b, "v": v, "w": w})
    want = df.groupby(["a", "b"], sort=True).agg(
        med=("v", "median"),
        lo=("v", "min"),
        hi=("v", "max"),
        n=("w", "nunique"),
        s=("w", "sum"),
        top=("w", "max"),
    )
    g = Groups(a, b)
    assert len(g) == len(want)
    assert list(zip(g.first(a).tolist(), g.first(b).tolist())) == list(want.index)
    for got, col in ((g.median(v), "med"), (g.min(v), "lo"), (g.max(v), "hi")):
        np.testing.assert_array_equal(got, want[col].to_numpy(), err_msg=col)  # NaN == NaN here
    assert g.nunique(w).tolist() == want["n"].tolist()
    assert g.sum(w).tolist() == want["s"].tolist()
    assert g.max(w).tolist() == want["top"].tolist()
    last = df.groupby(["a", "b"], sort=True)["w"].last()  # no NaN in w: last is the last row's
    assert g.last(w).tolist() == last.tolist()


def test_many_small_groups_take_the_sorted_path_to_the_same_figures() -> None:
    rng = np.random.default_rng(5)
    keys, v = rng.integers(0, 300, 2000), rng.normal(size=2000)
    v[rng.random(2000) < 0.2] = np.nan
    g = Groups(keys)
    assert len(g) > 64  # more groups than the partition loop takes
    want = pd.Series(v).groupby(keys).median().to_numpy()
    np.testing.assert_array_equal(g.median(v), want)


def test_rows_keep_their_order_within_a_group() -> None:
    g = Groups(np.array([2, 1, 2, 1, 2]))
    assert (
        g.rows.tolist() == [1, 3, 0, 2, 4]
        and g.starts.tolist() == [0, 2]
        and g.ids.tolist() == [1, 0, 1, 0, 1]
    )


def test_codes_in_groupby_order_and_missing_is_minus_one() -> None:
    cat = pd.Series(pd.Categorical(["b", "a", None, "b"], categories=["a", "b"]))
    got, names = codes(cat)
    assert got.tolist() == [1, 0, -1, 1] and names.tolist() == ["a", "b"]
    got, names = codes(pd.Series(["b", None, "a"], dtype=object))
    assert got.tolist() == [1, -1, 0] and names.tolist() == ["a", "b"]
    # categories in another order: theirs, as groupby(sort=True) orders them
    got, names = codes(pd.Series(pd.Categorical(["b", "a", "a"], categories=["b", "a", "c"])))
    assert got.tolist() == [0, 1, 1] and names.tolist() == ["b", "a", "c"]
