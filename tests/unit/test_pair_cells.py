"""The pair cells (reports.evidence.pairs.Cells) are the list the report used to build whole:
every pair as (busbw, a, b), slowest first, names breaking ties — made only for the cells
asked for (a 1,000-node round-robin has ~500k pairs; a report shows 20)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from reports.evidence.pairs import Cells
from reports.shared.outliers import PairValues

NAMES = ["a", "b", "c10", "c9", "node1", "é"]


def _the_list(pv: PairValues) -> list[tuple[float, str, str]]:
    a, b, v = pv.names[pv.ia], pv.names[pv.ib], pv.v
    order = np.lexsort((b.astype(str), a.astype(str), v))
    return list(zip(v[order].tolist(), a[order].tolist(), b[order].tolist()))


@settings(max_examples=100, deadline=None)
@given(
    st.dictionaries(
        st.tuples(st.sampled_from(NAMES), st.sampled_from(NAMES)), st.sampled_from([1.0, 2.0, 3.5])
    )
)
def test_cells_are_the_sorted_list(pairs: dict[tuple[str, str], float]) -> None:
    pv = PairValues.of({k: v for k, v in pairs.items() if k[0] != k[1]})
    want, cells = _the_list(pv), Cells(pv)
    assert len(cells) == len(want) and bool(cells) == bool(want)
    assert list(cells) == want and cells == want and cells[:3] == want[:3] and cells[-2:] == want[-2:]
    if want:
        assert cells[0] == want[0] and cells[-1] == want[-1]
