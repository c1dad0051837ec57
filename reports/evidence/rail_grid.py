"""Node x rail (pure): at fleet scale (1,000 nodes x 8 rails) which node and which rail stand
out. Each cell is the host's score on that rail (its best pair there: what its NIC of that
rail does when the partner is not the limit, reports.shared.outliers.node_scores), beside the rail's
fleet median; a cell is an outlier when under (1 - DEFAULT_MIN_GAP) x that median, the pair
tests' own rule. The report draws the grid as a heat map (report.html) and lists the cells
furthest under their rail's median (report.md, report.html).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from reports.shared.outliers import DEFAULT_MIN_GAP, PairValues

MAX_OUTLIERS = 20  # cells listed, furthest under their rail's median first


@dataclass(frozen=True, kw_only=True, slots=True)
class RailCell:
    host: str
    rail: int
    busbw: float  # the host's best pair busbw on this rail, GB/s
    median: float  # the rail's fleet median of those scores
    share: float  # busbw / median


@dataclass(frozen=True, kw_only=True, slots=True)
class RailGrid:
    hosts: list[str]  # sorted by name: the grid's rows
    rails: list[int]  # sorted: its columns
    values: np.ndarray  # [host, rail] busbw, NaN where the host has no pair on that rail
    medians: np.ndarray  # per rail, the median of its finite cells
    outliers: list[RailCell]  # at most MAX_OUTLIERS cells under (1 - min gap) x their rail's median

    def shares(self) -> np.ndarray:
        """[host, rail] each cell over its rail's median (NaN: unmeasured, or a rail of no median)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.medians > 0, self.values / self.medians, np.nan)


def rail_grid(
    rails: Mapping[int, PairValues], min_gap: float = DEFAULT_MIN_GAP, limit: int = MAX_OUTLIERS
) -> RailGrid | None:
    """The node x rail grid of pair tests run on two rails or more, else None (one rail: the
    node scores and the pair matrix say it all)."""
    if len(rails) < 2:
        return None
    order = sorted(rails)
    hosts = sorted({str(h) for pv in rails.values() for h in pv.names})
    row = {h: i for i, h in enumerate(hosts)}
    values = np.full((len(hosts), len(order)), np.nan)
    for j, rail in enumerate(order):
        pv = rails[rail]
        best = pv.scores()
        has = np.isfinite(best)
        at = np.array([row[str(h)] for h in pv.names[has]], dtype=np.int64)
        values[at, j] = np.clip(best[has], 0.0, None)
    medians = np.array(
        [float(np.median(c[np.isfinite(c)])) if np.isfinite(c).any() else np.nan for c in values.T]
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(medians > 0, values / medians, np.nan)
    low = np.argwhere(np.nan_to_num(share, nan=np.inf) < 1 - min_gap)
    cells = sorted(
        (float(share[i, j]), hosts[i], order[j], float(values[i, j]), float(medians[j]))
        for i, j in low.tolist()
    )
    outliers = [RailCell(host=h, rail=r, busbw=v, median=m, share=s) for s, h, r, v, m in cells[:limit]]
    return RailGrid(hosts=hosts, rails=order, values=values, medians=medians, outliers=outliers)
