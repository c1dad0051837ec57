"""Pair evidence rail by rail (pure): a node of several ranks has one NIC per local rank (rail j
is local rank j), and a pair test runs every rail of a pair at once, one record per rail
(`rail`; records without it are rail 0). Each rail is its own fleet: the pair values, scores
and outlier rule of reports.shared.outliers, computed rail by rail, so that a slow NIC is a
low outlier on its rail alone; the matrix a report shows holds each pair's slowest rail.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from reports.evidence.pairs import Cells, PairEvidence, confirmed_with, pair_matrix, pair_values
from reports.evidence.rail_grid import rail_grid
from reports.shared.outliers import PairValues, node_scores


def rail_of(frame: pd.DataFrame) -> np.ndarray:
    """Each row's rail (a record without `rail` is rail 0)."""
    return (
        frame["rail"].fillna(0).to_numpy(dtype=np.int64)
        if "rail" in frame
        else np.zeros(len(frame), np.int64)
    )


def rail_values(frame: pd.DataFrame) -> dict[int, PairValues]:
    """pair_values rail by rail: {rail: values} for every rail with pair records."""
    pair = (frame["scope"] == "pair").to_numpy()
    rail = rail_of(frame)
    rails = sorted(set(rail[pair].tolist())) or [0]
    if rails == [0]:
        return {0: pair_values(frame)}
    return {j: pair_values(frame[pair & (rail == j)]) for j in rails}


def slowest_rail(rails: Mapping[int, PairValues]) -> PairValues:
    """Per host pair, its slowest rail's busbw (one rail: that rail's values)."""
    if len(rails) == 1:
        return next(iter(rails.values()))
    names = np.asarray(sorted({str(h) for pv in rails.values() for h in pv.names}), dtype=object)
    ia, ib, v = [], [], []
    for pv in rails.values():
        code = np.searchsorted(names, pv.names) if len(pv.names) else np.array([], np.int64)
        ia.append(code[pv.ia] if len(pv.ia) else pv.ia)
        ib.append(code[pv.ib] if len(pv.ib) else pv.ib)
        v.append(pv.v)
    key = np.concatenate(ia) * len(names) + np.concatenate(ib)
    vals = np.concatenate(v)
    order = np.lexsort((vals, key))  # per key, the smallest value first
    key, vals = key[order], vals[order]
    first = np.ones(len(key), dtype=bool)
    first[1:] = key[1:] != key[:-1]
    return PairValues(names, key[first] // len(names), key[first] % len(names), vals[first])


def untested_rails(rails: Mapping[int, PairValues]) -> dict[str, tuple[int, ...]]:
    """{host: rails it has no pair record on} where some host was measured on them."""
    seen = {j: set(pv.names[pv.ia].tolist()) | set(pv.names[pv.ib].tolist()) for j, pv in rails.items()}
    hosts = sorted(set().union(*seen.values())) if seen else []
    out = {h: tuple(j for j in sorted(seen) if h not in seen[j]) for h in hosts}
    return {h: js for h, js in out.items() if js}


def untested_note(untested: Mapping[str, tuple[int, ...]]) -> str | None:
    """The report's line on the (host, rail)s no pair test measured, or None when every
    host was measured on every rail."""
    if not untested:
        return None
    said = "; ".join(
        f"{h}: rail{'s' if len(js) > 1 else ''} {', '.join(map(str, js))}"
        for h, js in sorted(untested.items())
    )
    return (
        f"rails not tested by the pair tests (ranks per node differ; rail j is local rank j, measured "
        f"only between nodes that both run a rank j): {said}; a slow NIC there cannot be named"
    )


def pair_evidence(frame: pd.DataFrame) -> PairEvidence:
    """The values, scores, matrix and cells are each pair's slowest rail (its only rail on
    nodes of one rank); `rails` holds every rail's own values for the judgement."""
    rails = rail_values(frame)
    values = slowest_rail(rails)
    hosts, matrix = pair_matrix(values)
    pair_rows = frame["scope"] == "pair"
    return PairEvidence(
        values=values,
        scores=node_scores(values),
        size=int(frame["bytes"][pair_rows].max()) if pair_rows.any() else 0,
        hosts=hosts,
        matrix=matrix,
        cells=Cells(values),  # the same cells as the matrix's upper triangle
        confirmed=confirmed_with(frame),
        rails=rails,
        untested=untested_rails(rails),
        grid=rail_grid(rails),
    )
