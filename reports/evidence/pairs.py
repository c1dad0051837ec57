"""Pair evidence (pure): the pair values read from the table, the matrix behind the report's
heatmap and its cells slowest first, and who confirmed whom — computed once per report. The
outlier rule that judges them (each node's score, slow nodes and links) and the confirmation
schedule are reports.shared.outliers, shared with the measuring side.

Pair tests (`scope: pair` records, two hosts each, `pass` 1 for the round-robin and 2 for the
confirmation re-pairings) give a matrix of inter-node busbw. The pairs are held as arrays (one
entry per pair measured), so judging them costs what was measured; only the dense matrix
grows with the square of the hosts, and it is built for at most MAX_MATRIX_HOSTS of them
(a ring of 5,000 hosts made a 200 MB matrix and a 3 GB figure; 10,000, a MemoryError).

Rails (several ranks per node) are judged rail by rail: reports.evidence.rails.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import overload

import numpy as np
import pandas as pd

from reports.evidence.rail_grid import RailGrid
from reports.shared.outliers import PairValues, suspects

PAIR_OPS = ("all_reduce", "sendrecv")  # preferred op for pair tests, in this order
MAX_MATRIX_HOSTS = 2000  # the heatmap's matrix: 2,000^2 cells of 8 bytes = 32 MB


def _pair_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Pair records with two distinct hosts (the table's frame)."""
    return df[(df["scope"] == "pair") & df["pair_a"].notna()]


def _pair_op(rows: pd.DataFrame) -> str | None:
    ops = {str(o) for o in rows["op"].unique()}
    for op in PAIR_OPS:
        if op in ops:
            return op
    return min(ops) if ops else None


def _codes(col: pd.Series, names: np.ndarray) -> np.ndarray:
    """Codes into `names` (sorted) of a host-name column (categorical from the table)."""
    cat = pd.Categorical(col)
    return np.searchsorted(names, np.asarray(cat.categories.astype(str), dtype=object))[cat.codes]


def _best(names: np.ndarray, ia: np.ndarray, ib: np.ndarray, v: np.ndarray) -> PairValues:
    """Best busbw per pair (never below 0)."""
    if not len(v):
        return PairValues(names, ia, ib, v)
    key = ia * len(names) + ib
    order = np.lexsort((-v, key))  # per key, the largest value first
    key, v = key[order], v[order]
    first = np.ones(len(key), dtype=bool)
    first[1:] = key[1:] != key[:-1]
    k = key[first]
    return PairValues(names, k // len(names), k % len(names), np.clip(v[first], 0.0, None))


def pair_values(frame: pd.DataFrame) -> PairValues:
    """Best busbw (GB/s) per host pair at the largest size measured. The confirmation pass
    (`pass` 2) supersedes the round-robin for the suspects it re-measured: their first-pass
    pairs are dropped, so a suspect cleared by good partners leaves no slow link behind, and
    one confirmed slow is judged on the confirmation alone. The suspects are recomputed
    from the first pass exactly as `confirmation_pairs` chose them."""
    # the columns used, before any row is taken: a 1,000-node frame has ~500k pair rows
    rows = _pair_rows(frame[["scope", "pair_a", "pair_b", "op", "wrong", "bytes", "busbw_GBps", "pass"]])
    op = _pair_op(rows)
    recs = rows[(rows["op"] == op) & (rows["wrong"] == 0)]
    if recs.empty:
        return PairValues([], np.array([], np.int64), np.array([], np.int64), np.array([]))
    top = recs[recs["bytes"] == recs["bytes"].max()]
    a, b = top["pair_a"], top["pair_b"]
    # every name either column may hold (its categories): codes by name order, so a < b holds
    cats = (pd.Categorical(a).categories, pd.Categorical(b).categories)
    names = np.asarray(sorted({str(h) for c in cats for h in c}), dtype=object)
    ia, ib, v = _codes(a, names), _codes(b, names), top["busbw_GBps"].to_numpy(dtype=float)
    second = top["pass"].to_numpy() == 2
    first = _best(names, ia[~second], ib[~second], v[~second])
    if second.any():
        again = _best(names, ia[second], ib[second], v[second])
        bad_nodes, bad_links = suspects(first)
        met = set(again.names[again.ia]) | set(again.names[again.ib])
        first = first.without((set(bad_nodes) | {h for k in bad_links for h in k}) & met)
        both = (np.concatenate([first.ia, again.ia]), np.concatenate([first.ib, again.ib]))
        return _best(names, *both, np.concatenate([first.v, again.v]))
    return first


def pair_matrix(values: PairValues) -> tuple[list[str], np.ndarray]:
    """Hosts (sorted) and the symmetric matrix of pair busbw (GB/s) at the largest size;
    NaN where a pair was not measured; a 0 x 0 matrix over MAX_MATRIX_HOSTS hosts."""
    used = np.unique(np.concatenate([values.ia, values.ib]))
    if len(used) > MAX_MATRIX_HOSTS:
        return [str(h) for h in values.names[used]], np.zeros((0, 0))
    index = np.full(len(values.names), -1)
    index[used] = np.arange(len(used))
    m = np.full((len(used), len(used)), np.nan)
    ia, ib = index[values.ia], index[values.ib]
    m[ia, ib] = m[ib, ia] = values.v
    return [str(h) for h in values.names[used]], m


def confirmed_with(frame: pd.DataFrame) -> dict[str, list[str]]:
    """{host: partners it met in second-pass (confirmation) pair records}."""
    rows = frame[(frame["scope"] == "pair") & (frame["pass"] == 2)]
    out: dict[str, set[str]] = {}
    for h1, h2, many in zip(rows["host"], rows["host2"], rows["hosts"]):
        names = many if isinstance(many, tuple) else tuple(str(h) for h in (h1, h2) if isinstance(h, str))
        for h in names:
            out.setdefault(h, set()).update(x for x in names if x != h)
    return {h: sorted(v) for h, v in out.items()}


@dataclass(frozen=True, kw_only=True, slots=True)
class PairEvidence:
    """Everything the pair tests show, computed once: the values, each node's score, the
    matrix and its cells slowest first, the size judged, and who confirmed whom."""

    values: PairValues
    scores: dict[str, float]
    size: int  # the largest pair size (bytes); 0 without pair records
    hosts: list[str] = field(default_factory=list)  # the matrix's hosts, sorted
    matrix: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))  # NaN: not measured
    cells: Sequence[tuple[float, str, str]] = ()  # (busbw, a, b), slowest first
    confirmed: dict[str, list[str]] = field(default_factory=dict)
    rails: dict[int, PairValues] = field(default_factory=dict)  # each rail's values
    untested: dict[str, tuple[int, ...]] = field(default_factory=dict)  # host -> rails it lacks
    grid: RailGrid | None = None  # node x rail: each host's score on each rail (two rails or more)

    @property
    def matrix_note(self) -> str:
        """Why the pair matrix is not drawn ("" when it is, or there are no pairs)."""
        if len(self.hosts) <= MAX_MATRIX_HOSTS:
            return ""
        return (
            f"The pair matrix of {len(self.hosts):,} hosts is not drawn (at most {MAX_MATRIX_HOSTS:,} hosts); "
            "the slowest pairs are listed, and every pair is judged."
        )


class Cells(Sequence[tuple[float, str, str]]):
    """The pairs as (busbw, a, b), slowest first, names breaking ties: a tuple is made only for
    the cells asked for (a report shows 20 of a 1,000-node round-robin's ~500k)."""

    def __init__(self, values: PairValues) -> None:
        self._values = values
        # names are sorted, so codes order as their names do: the tie-break without strings
        self._order = np.lexsort((values.ib, values.ia, values.v))

    def __len__(self) -> int:
        return len(self._order)

    @overload
    def __getitem__(self, i: int) -> tuple[float, str, str]: ...
    @overload
    def __getitem__(self, i: slice) -> list[tuple[float, str, str]]: ...
    def __getitem__(self, i: int | slice) -> tuple[float, str, str] | list[tuple[float, str, str]]:
        pv, at = self._values, np.atleast_1d(self._order[i])
        got = list(zip(pv.v[at].tolist(), pv.names[pv.ia[at]].tolist(), pv.names[pv.ib[at]].tolist()))
        return got if isinstance(i, slice) else got[0]

    def __iter__(self) -> Iterator[tuple[float, str, str]]:
        return iter(self[:])

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    def __repr__(self) -> str:
        return f"Cells({self[:3]}{', ...' if len(self) > 3 else ''} {len(self)} pairs)"
