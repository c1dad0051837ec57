"""The fleet outlier rule and the confirmation schedule (pure, numbers in, names out): which
node or link of a fleet of pair measurements is slow, which pairs to measure again, and how
pairs split into rounds that share no host. The measuring side (netbench: which pairs to
measure again) and the judgement (reports.judging.network.localise: which node or link to name) decide
by this one rule; the report's pair evidence is reports.evidence.pairs.

A node's *score* is the best busbw of any pair it took part in: a healthy node reaches full
speed with at least one healthy partner, while every pair of a node with a slow NIC is capped
by it. So

- a node is slow when its score is a low outlier of the fleet of scores (median minus the
  larger of K robust spreads — 1.4826 × MAD — and a minimum relative gap, so that normal
  jitter is never a finding), or is below the expected pair figure while other nodes meet it;
- a link is slow when one pair falls well below what both its ends reach with other nodes
  (min of the two scores): a slow path between two otherwise healthy nodes.

A fleet comparison needs 3 hosts. The pairs are held as arrays (PairValues, one entry per pair
measured), so judging them costs what was measured.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Iterator, Mapping, Sequence

import numpy as np

DEFAULT_MIN_GAP = 0.25  # never call anything within 25% of its reference an outlier
MAD_K = 3.0  # ... nor within 3 robust standard deviations of the fleet
MAD_TO_SIGMA = 1.4826  # MAD of a normal distribution × this = its standard deviation
MIN_FLEET = 3  # with 2 hosts a low one cannot be told from a high one

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


def rail_confirmation_pairs(by_rail: Mapping[int, dict[Pair, float]]) -> list[Pair]:
    """The confirmation pairs of every rail together (a re-pairing runs on all rails at once)."""
    return list(dict.fromkeys(p for j in sorted(by_rail) for p in confirmation_pairs(by_rail[j])))
