"""Statistics per group of rows (pure numpy): what the sweeps take from pandas' groupby, on
integer keys. A 1,000-node run's frame has ~680k rows; grouping it by five keys through
pandas (categorical and string keys, `nunique`, a frame per group) cost ~0.8 s of the
report's evidence, sorting integer keys ~0.1 s.

The figures are pandas' own: a median is the middle value, or the mean of the two middle
values, NaN left out (pandas' group median: (a + b) / 2 of the two middle order statistics);
a minimum or maximum leaves NaN out and is NaN for a group of NaN only; a sum is of integers.
tests/unit/test_grouped.py holds them against pandas.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def codes(col: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """(code per row, -1 for a missing value; the distinct values), coded in the order pandas'
    groupby(sort=True) puts them: a categorical's categories in their order (the table's are
    sorted by name: its own codes serve), else the values sorted."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        return col.cat.codes.to_numpy(dtype=np.int64), np.asarray(col.cat.categories, dtype=object)
    got, names = pd.factorize(col, sort=True)
    return got.astype(np.int64), np.asarray(names, dtype=object)


class Groups:
    """The rows grouped by integer keys (the first most significant): groups in key order, the
    rows of each in row order. `ids` is each row's group, `rows` the row numbers group by
    group, `starts` where each group begins in `rows`."""

    def __init__(self, *keys: np.ndarray) -> None:
        n = len(keys[0])
        self.rows = np.lexsort(keys[::-1]) if n else np.zeros(0, dtype=np.int64)  # stable
        change = np.zeros(n, dtype=bool)
        if n:
            change[0] = True
        for k in keys:
            s = k[self.rows]
            change[1:] |= s[1:] != s[:-1]
        self.starts = np.flatnonzero(change)
        self.sizes = np.diff(np.append(self.starts, n))
        self.ids = np.empty(n, dtype=np.int64)
        self.ids[self.rows] = np.cumsum(change) - 1

    def runs(self, change: np.ndarray) -> Groups:
        """The coarser groups made of runs of these (a new one where `change`, per group, is
        true): e.g. the groups of the leading keys. Rows in each stay in this grouping's order,
        not row order: for order-free figures (max, nunique) and keys."""
        out = Groups.__new__(Groups)
        out.rows = self.rows
        out.starts = self.starts[change]
        out.sizes = np.diff(np.append(out.starts, len(self.rows)))
        out.ids = (np.cumsum(change) - 1)[self.ids]
        return out

    def __len__(self) -> int:
        return len(self.starts)

    def first(self, col: np.ndarray) -> np.ndarray:
        """The value of each group's first row (of a key: the group's key)."""
        return col[self.rows[self.starts]]

    def last(self, col: np.ndarray) -> np.ndarray:
        """The value of each group's last row."""
        return col[self.rows[self.starts + self.sizes - 1]]

    def median(self, v: np.ndarray) -> np.ndarray:
        vs = v.astype(float)[self.rows]  # group by group
        if len(self) > max(64, len(vs) // 64):  # many small groups: one sort beats a loop
            return self._median_sorted(v.astype(float))
        cnt = np.add.reduceat(~np.isnan(vs), self.starts) if len(vs) else np.zeros(0, dtype=np.int64)
        out = np.full(len(self), np.nan)
        for k, (start, size, c) in enumerate(zip(self.starts.tolist(), self.sizes.tolist(), cnt.tolist())):
            if c:  # the middle order statistics of the non-NaN values (partition puts NaN last)
                lo, hi = (c - 1) // 2, c // 2
                seg = (
                    np.partition(vs[start : start + size], (lo, hi))
                    if size > 2
                    else np.sort(vs[start : start + size])
                )
                out[k] = seg[lo] if lo == hi else (seg[lo] + seg[hi]) / 2
        return out

    def _median_sorted(self, v: np.ndarray) -> np.ndarray:
        vs = v[np.lexsort((v, self.ids))]  # sorted within each group, NaN last
        cnt = np.add.reduceat(~np.isnan(vs), self.starts)
        lo = self.starts + np.maximum(cnt - 1, 0) // 2
        hi = np.minimum(self.starts + cnt // 2, len(vs) - 1)
        mid = np.where(cnt % 2 == 1, vs[lo], (vs[lo] + vs[hi]) / 2)
        return np.where(cnt == 0, np.nan, mid)

    def min(self, v: np.ndarray) -> np.ndarray:
        """NaN left out; of equal values the first (pandas keeps the first it meets)."""
        return np.fmin.reduceat(v.astype(float)[self.rows], self.starts) if len(v) else np.zeros(0)

    def max(self, v: np.ndarray) -> np.ndarray:
        """As min; integers stay integers."""
        vs = v[self.rows]
        fn = np.fmax if vs.dtype.kind == "f" else np.maximum
        return fn.reduceat(vs, self.starts) if len(vs) else vs[:0]

    def sum(self, v: np.ndarray) -> np.ndarray:
        """Integer sums (floats would depend on the order of addition)."""
        return np.add.reduceat(v[self.rows], self.starts) if len(v) else np.zeros(0, dtype=v.dtype)

    def nunique(self, v: np.ndarray) -> np.ndarray:
        """Distinct values per group (integers)."""
        vs = v[np.lexsort((v, self.ids))]
        new = np.ones(len(vs), dtype=bool)
        new[1:] = vs[1:] != vs[:-1]
        new[self.starts] = True
        return np.add.reduceat(new, self.starts) if len(vs) else np.zeros(0, dtype=np.int64)
