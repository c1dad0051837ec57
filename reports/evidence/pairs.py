"""Pair and per-node evidence (pure): the pair matrix, each node's score, the fleet outlier
rule, and the schedule of the confirmation pass — computed once per report from the table,
and used by the measuring side (netbench: which pairs to measure again) and the judgement
(reports.judging.localise: which node or link to name).

Pair tests (`scope: pair` records, two hosts each, `pass` 1 for the round-robin and 2 for the
confirmation re-pairings) give a matrix of inter-node busbw. A node's *score* is the best busbw
of any pair it took part in: a healthy node reaches full speed with at least one healthy
partner, while every pair of a node with a slow NIC is capped by it. So

- a node is slow when its score is a low outlier of the fleet of scores (median minus the
  larger of K robust spreads — 1.4826 × MAD — and a minimum relative gap, so that normal
  jitter is never a finding), or is below the expected pair figure while other nodes meet it;
- a link is slow when one pair falls well below what both its ends reach with other nodes
  (min of the two scores): a slow path between two otherwise healthy nodes.

A fleet comparison needs 3 hosts. The pairs are held as arrays (one entry per pair measured),
so judging them costs what was measured; only the dense matrix behind the report's heatmap
grows with the square of the hosts, and it is built for at most MAX_MATRIX_HOSTS of them
(a ring of 5,000 hosts made a 200 MB matrix and a 3 GB figure; 10,000, a MemoryError).

Rails (several ranks per node) are judged rail by rail: reports.evidence.rails.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import overload

import numpy as np
import pandas as pd

DEFAULT_MIN_GAP = 0.25  # never call anything within 25% of its reference an outlier
MAD_K = 3.0  # ... nor within 3 robust standard deviations of the fleet
MAD_TO_SIGMA = 1.4826  # MAD of a normal distribution × this = its standard deviation
MIN_FLEET = 3  # with 2 hosts a low one cannot be told from a high one
PAIR_OPS = ("all_reduce", "sendrecv")  # preferred op for pair tests, in this order
MAX_MATRIX_HOSTS = 2000  # the heatmap's matrix: 2,000^2 cells of 8 bytes = 32 MB

Pair = tuple[str, str]


def _key(a: str, b: str) -> Pair:
    return (a, b) if a <= b else (b, a)


# -- the fleet outlier test ---------------------------------------------------------
def low_threshold(values: Sequence[float], min_gap: float = DEFAULT_MIN_GAP) -> tuple[float, float]:
    """(median, threshold): values under the threshold are low outliers of this fleet."""
    # numpy's median is statistics.median's (the mean of the two middle values), ~50x faster
    # on the 500k pair ratios of a 1,000-node round-robin
    arr = np.asarray(values, dtype=float)
    med = float(np.median(arr))
    mad = float(np.median(np.abs(arr - med)))
    return med, med - max(MAD_K * MAD_TO_SIGMA * mad, min_gap * med)


def low_outliers(values: Mapping[str, float], min_gap: float = DEFAULT_MIN_GAP) -> tuple[float, list[str]]:
    """(fleet median, sorted names whose value is a low outlier); none under MIN_FLEET values."""
    if len(values) < MIN_FLEET:
        return (statistics.median(values.values()) if values else 0.0), []
    med, thr = low_threshold(list(values.values()), min_gap)
    return med, sorted(h for h, v in values.items() if v < thr)


# -- the pair matrix ----------------------------------------------------------------
class PairValues(Mapping[Pair, float]):
    """{(a, b): busbw} with a < b, held as arrays: `names` (the hosts, sorted) and per pair
    the codes `ia` < `ib` into it and the value `v`. A 1,000-node round-robin has ~500k pairs,
    judged here without a Python object per pair."""

    def __init__(
        self, names: Sequence[str] | np.ndarray, ia: np.ndarray, ib: np.ndarray, v: np.ndarray
    ) -> None:
        self.names = np.asarray(names, dtype=object)
        self.ia, self.ib, self.v = ia.astype(np.int64), ib.astype(np.int64), v.astype(float)
        self._dict: dict[Pair, float] | None = None

    @classmethod
    def of(cls, pairs: Mapping[Pair, float]) -> PairValues:
        if isinstance(pairs, PairValues):
            return pairs
        d = {_key(*k): v for k, v in pairs.items()}
        names = sorted({h for k in d for h in k})
        code = {h: i for i, h in enumerate(names)}
        ia = np.array([code[a] for a, _ in d], dtype=np.int64)
        ib = np.array([code[b] for _, b in d], dtype=np.int64)
        return cls(names, ia, ib, np.array(list(d.values()), dtype=float))

    def _d(self) -> dict[Pair, float]:
        if self._dict is None:
            a, b = self.names[self.ia], self.names[self.ib]
            self._dict = dict(zip(zip(a.tolist(), b.tolist()), self.v.tolist()))
        return self._dict

    def __getitem__(self, k: Pair) -> float:
        return self._d()[k]

    def __iter__(self) -> Iterator[Pair]:
        return iter(self._d())

    def __len__(self) -> int:
        return len(self.v)

    def scores(self) -> np.ndarray:
        """Each host's best pair (-inf where it has none), by code."""
        best = np.full(len(self.names), -np.inf)
        np.maximum.at(best, self.ia, self.v)
        np.maximum.at(best, self.ib, self.v)
        return best

    def without(self, hosts: set[str]) -> PairValues:
        """The pairs that touch none of `hosts`."""
        drop = np.isin(self.names, sorted(hosts))
        keep = ~(drop[self.ia] | drop[self.ib])
        return PairValues(self.names, self.ia[keep], self.ib[keep], self.v[keep])


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


def node_scores(pairs: Mapping[Pair, float]) -> dict[str, float]:
    """Each host's best pair: what its own link can do when its partner is not the limit."""
    pv = PairValues.of(pairs)
    best = pv.scores()
    has = np.isfinite(best)
    return dict(zip(pv.names[has].tolist(), np.clip(best[has], 0.0, None).tolist()))


# -- slow nodes and links -------------------------------------------------------------
def slow_nodes(
    pairs: Mapping[Pair, float], expected: float | None = None, min_gap: float = DEFAULT_MIN_GAP
) -> dict[str, tuple[float, str]]:
    """{host: (reference GB/s, basis "fleet" | "spec")} for hosts whose every pair is slow."""
    scores = node_scores(pairs)
    med, fleet = low_outliers(scores, min_gap)
    out = {h: (med, "fleet") for h in fleet}
    if expected:
        floor = (1 - min_gap) * expected
        meeting = [s for s in scores.values() if s >= floor]
        # Every node slow is a fleet-wide network problem (the judge's finding), not a node.
        # A node just under the figure while the others are just over it is not one either:
        # it must also be clearly slower than the nodes that meet the figure.
        if meeting:
            bar = min(floor, (1 - min_gap) * statistics.median(meeting))
            for h in sorted(h for h, s in scores.items() if s < bar and h not in out):
                out[h] = (expected, "spec")
    return out


def slow_links(pairs: Mapping[Pair, float], min_gap: float = DEFAULT_MIN_GAP) -> dict[Pair, float]:
    """{pair: what both ends reach elsewhere} for pairs far below the slower end's score.
    A pair capped by a slow node sits at that node's score and is not a link."""
    return {k: ref for k, (_, ref) in slow_link_values(pairs, min_gap).items()}


def slow_link_values(
    pairs: Mapping[Pair, float], min_gap: float = DEFAULT_MIN_GAP
) -> dict[Pair, tuple[float, float]]:
    """{pair: (its busbw, what both ends reach elsewhere)} for pairs far below the slower
    end's score. A pair capped by a slow node sits at that node's score and is not a link."""
    pv = PairValues.of(pairs)
    best = np.clip(pv.scores(), 0.0, None)
    pos = pv.v > 0
    if np.isfinite(pv.scores()).sum() < MIN_FLEET or not pos.any():
        return {}
    ia, ib, v = pv.ia[pos], pv.ib[pos], pv.v[pos]
    ref = np.minimum(best[ia], best[ib])
    ratios = v / ref
    _, thr = low_threshold(ratios, min_gap)
    # The ratio's reference is 1 (a pair at its slower end's speed), not the fleet median.
    thr = min(thr, 1 - min_gap)
    low = np.flatnonzero(ratios < thr)
    return {(str(pv.names[ia[i]]), str(pv.names[ib[i]])): (float(v[i]), float(ref[i])) for i in low}


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


# -- the confirmation pass --------------------------------------------------------------
def suspects(
    pair_GBps: Mapping[Pair, float], min_gap: float = DEFAULT_MIN_GAP / 2
) -> tuple[list[str], list[Pair]]:
    """Nodes and links worth a second look: the same tests at half the gap, so that a
    borderline first pass is measured again rather than judged on one sample."""
    pairs = PairValues.of(pair_GBps)
    return sorted(slow_nodes(pairs, None, min_gap)), sorted(slow_links(pairs, min_gap))


def confirmation_pairs(
    pair_GBps: dict[tuple[str, str], float], per_suspect: int = 2
) -> list[tuple[str, str]]:
    """Second pass: re-pair each suspect host with known-good hosts. Input: busbw per
    (host, host) pair from the round-robin pass. Output: pairs to measure again.
    A suspect node meets `per_suspect` good partners (the fastest first, spread over the
    suspects so that the pairs can run concurrently); a suspect link is measured again and
    each of its ends meets a good partner."""
    pairs = {_key(*k): v for k, v in pair_GBps.items()}
    bad_nodes, bad_links = suspects(pairs)
    flagged = set(bad_nodes) | {h for k in bad_links for h in k}
    scores = node_scores(pairs)
    good = sorted((h for h in scores if h not in flagged), key=lambda h: (-scores[h], h))
    if not good:
        return []
    out: list[Pair] = []
    turn = 0

    def meet(h: str, count: int) -> None:
        nonlocal turn
        for i in range(min(count, len(good))):
            out.append(_key(h, good[(turn + i) % len(good)]))
        turn += 1

    for h in bad_nodes:
        meet(h, per_suspect)
    for a, b in bad_links:
        if a in bad_nodes or b in bad_nodes:
            continue
        out.append((a, b))
        meet(a, 1)
        meet(b, 1)
    return list(dict.fromkeys(out))


def rounds(pairs: Iterable[Pair]) -> list[list[Pair]]:
    """Greedy split of pairs into rounds in which no host is in two pairs, so that each
    round's pairs can run at the same time without sharing a NIC."""
    out: list[tuple[set[str], list[Pair]]] = []
    for p in pairs:
        for busy, members in out:
            if not busy & set(p):
                busy.update(p)
                members.append(p)
                break
        else:
            out.append((set(p), [p]))
    return [members for _, members in out]
