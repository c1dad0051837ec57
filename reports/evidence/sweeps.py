"""Sweeps: busbw against message size, one type for every curve (pure).

Two views of the same records, both `Sweep`s:

- **as recorded** (`recorded`): one sweep per (scope, op, backend, ranks), in-place results
  dropped where out-of-place ones exist at that size (nccl-tests prints both; they measure the
  same path). The report's tables and charts.
- **as judged** (`judged`): one curve per (effective scope, op). A `world` sweep is intra-node
  on one node and crosses nodes otherwise; an explicit intra-node / inter-node sweep of the
  same op replaces a world-derived one. For each size the busbw is the median over every
  record of that size (all groups, both placements). Inter-node rails are the exception: the
  rails of one run (one group per local rank) run at once and may share the node's NICs, so
  one rail can finish early and leave the link to the others; what a job spanning every GPU
  gets per GPU is the slowest rail's busbw. So per run the minimum over rails is taken, then
  the median over runs.

The plateau (one rule, `Sweep.plateau`) is the best per-size median among the three largest
sizes: large messages are where busbw saturates, and the best of the top three tolerates one
noisy point without rewarding a single outlier group. Records whose correctness check failed
(#wrong > 0) carry no bandwidth; a lone rank crosses no link and is not a curve.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from reports.table import hosts_in
from reports.units import format_size

if TYPE_CHECKING:
    import pandas as pd

PLATEAU_SIZES = 3
SCOPE_ORDER = ("world", "intra-node", "inter-node", "pair")
# Which advertised figure a scope is held against (the judgement's `expected` keys).
SCOPE_COMPONENT = {"intra-node": "intra-node network", "inter-node": "inter-node network"}


@dataclass(frozen=True, kw_only=True, slots=True)
class Sweep:
    """busbw (GB/s) by message size (bytes) for one scope and op, sizes ascending; every
    per-size figure is over the records of that size (medians, the minimum, sums)."""

    scope: str
    op: str
    backend: str
    ranks: int  # the widest group behind it
    nodes: int
    groups: int  # distinct groups measured
    sizes: tuple[int, ...]
    busbw: tuple[float, ...]  # median per size (NaN: every record of the size was wrong)
    hosts: tuple[str, ...] = ()
    time_us: tuple[float, ...] = ()  # median time per size
    algbw: tuple[float, ...] = ()
    busbw_min: tuple[float, ...] = ()
    groups_per_size: tuple[int, ...] = ()
    wrong: tuple[int, ...] = ()
    cv: tuple[float | None, ...] = ()  # mean iteration CV per size (None: not recorded)

    @property
    def label(self) -> str:
        r, n = self.ranks, self.nodes
        return (
            f"{self.op} · {r} rank{'s' if r != 1 else ''} on {n} node{'s' if n != 1 else ''} · {self.backend}"
        )

    @property
    def ranks_per_node(self) -> int:
        return max(1, round(self.ranks / max(1, self.nodes)))

    def plateau(self) -> tuple[int, float]:
        """(size, busbw): the best per-size median among the largest sizes (ties: the largest)."""
        top = [i for i in range(len(self.sizes) - 1, -1, -1)][:PLATEAU_SIZES]
        top = [i for i in top if not math.isnan(self.busbw[i])]
        if not top:
            return self.sizes[-1], float("nan")
        best = max(top, key=lambda i: self.busbw[i])
        return self.sizes[best], self.busbw[best]

    def at(self, size: float) -> tuple[float, str]:
        """busbw interpolated at `size` (linear in log size); outside the sweep the nearest
        end is used, and the note says so."""
        if size <= self.sizes[0]:
            below = f"below the smallest size measured ({format_size(self.sizes[0])}): its busbw used"
            return self.busbw[0], "" if size == self.sizes[0] else below
        if size >= self.sizes[-1]:
            above = f"above the largest size measured ({format_size(self.sizes[-1])}): its busbw used"
            return self.busbw[-1], "" if size == self.sizes[-1] else above
        i = bisect.bisect_left(self.sizes, size)
        if self.sizes[i] == size:
            return self.busbw[i], ""
        x0, x1 = math.log(self.sizes[i - 1]), math.log(self.sizes[i])
        w = (math.log(size) - x0) / (x1 - x0)
        return self.busbw[i - 1] + w * (self.busbw[i] - self.busbw[i - 1]), ""

    def point(self, size: int) -> tuple[float, float | None]:
        """(busbw, iteration CV) at a size that was measured."""
        i = self.sizes.index(size)
        return self.busbw[i], (self.cv[i] if self.cv else None)


def _strings(df: pd.DataFrame, *cols: str) -> pd.DataFrame:
    # plain Python strings: arrow-backed / categorical strings are slow to group and compare
    return df.assign(**{c: df[c].astype(str).astype(object) for c in cols})


def shown(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows the report shows: out-of-place only where a size also has in-place results
    (nccl-tests prints both; they measure the same path). Names stay categorical (the table
    sorts their categories, so grouping orders them by name)."""
    if frame.empty:
        return frame
    df = frame
    if not df["in_place"].any():  # nothing printed twice (stoker's own sweeps)
        return df
    keys = ["scope", "op", "backend", "ranks", "bytes"]
    has_oop = ~df.groupby(keys, observed=True)["in_place"].transform("min").astype(bool)
    return df[~(df["in_place"].astype(bool) & has_oop)]


def recorded(df: pd.DataFrame) -> list[Sweep]:
    """Sweeps as recorded (from `shown` rows), in a fixed order: scope (world, intra, inter,
    pair), op, backend, ranks."""
    if df.empty:
        return []
    keys = ["scope", "op", "backend", "ranks", "bytes"]
    ok = df["wrong"] == 0
    df = df.assign(bus=df["busbw_GBps"].where(ok), alg=df["algbw_GBps"].where(ok))
    g = (
        df.groupby(keys, sort=True, observed=True)
        .agg(
            t=("time_s", "median"),
            alg=("alg", "median"),
            bus=("bus", "median"),
            bus_min=("bus", "min"),
            groups=("group", "nunique"),
            wrong=("wrong", "sum"),
        )
        .reset_index()
    )
    whole = df.groupby(keys[:4], sort=True, observed=True).agg(
        nodes=("nodes", "max"), groups=("group", "nunique")
    )
    out: list[Sweep] = []
    for key, part in g.groupby(keys[:4], sort=True, observed=True):
        scope, op, backend, ranks = key
        nodes, groups = whole.loc[key]  # a group key of the same keys
        out.append(
            Sweep(
                scope=str(scope),
                op=str(op),
                backend=str(backend),
                ranks=int(ranks),
                nodes=int(nodes),
                groups=int(groups),
                sizes=tuple(int(b) for b in part["bytes"]),
                busbw=tuple(float(x) for x in part["bus"]),
                time_us=tuple(float(x) * 1e6 for x in part["t"]),
                algbw=tuple(float(x) for x in part["alg"]),
                busbw_min=tuple(float(x) for x in part["bus_min"]),
                groups_per_size=tuple(int(x) for x in part["groups"]),
                wrong=tuple(int(x) for x in part["wrong"]),
            )
        )
    order = {s: i for i, s in enumerate(SCOPE_ORDER)}
    return sorted(out, key=lambda s: (order.get(s.scope, 9), s.op != "all_reduce", s.op, s.backend, s.ranks))


def judged(frame: pd.DataFrame) -> tuple[dict[tuple[str, str], Sweep], int]:
    """The curves judged per (effective scope, op), and how many records were left out
    because their correctness check failed (their bandwidth means nothing)."""
    if frame.empty:
        return {}, 0
    wrong = int((frame["wrong"] != 0).sum())
    # a NaN or infinite figure never becomes a bandwidth (the reader refuses them too)
    use = frame[
        (frame["wrong"] == 0)
        & (frame["time_s"] > 0)
        & np.isfinite(frame["busbw_GBps"].to_numpy(dtype=float))
        & ~frame["scope"].isin(("pair", "groups"))
        & (frame["ranks"] >= 2)
    ]
    use = _strings(use, "scope", "op", "backend")
    scope = use["scope"].to_numpy()
    from_world = scope == "world"
    eff = np.where(from_world, np.where(use["nodes"].to_numpy() <= 1, "intra-node", "inter-node"), scope)
    use = use.assign(eff=eff.astype(object), from_world=from_world)
    rails = use["eff"].eq("inter-node") & ~use["from_world"]
    curves: dict[tuple[str, str], Sweep] = {}
    parts: list[tuple[tuple[str, str, bool], pd.DataFrame, pd.Series]] = []
    # keys in the order the records first show them (the findings' order), rails after
    for (sc, op, w), part in use[~rails].groupby(["eff", "op", "from_world"], sort=False):
        parts.append(
            ((str(sc), str(op), bool(w)), part, part.groupby("bytes", sort=False)["busbw_GBps"].median())
        )
    for op, part in use[rails].groupby("op", sort=False):
        per_run = part.groupby(["bytes", "run_id", "in_place"], sort=False, observed=True)["busbw_GBps"].min()
        parts.append(
            (("inter-node", str(op), False), part, per_run.groupby(level="bytes", sort=False).median())
        )
    # world-derived first, so an explicit sweep of the same (scope, op) replaces it
    for (sc, op, _), part, med in sorted(parts, key=lambda p: p[0][2], reverse=True):
        med = med.sort_index()
        widest = part.sort_values(["ranks", "nodes"], kind="stable").iloc[-1]
        cv = part["time_cv"]
        cvs = part[cv.notna() & (cv >= 0)].groupby("bytes")["time_cv"].mean()
        sizes = tuple(int(b) for b in med.index)
        curves[(sc, op)] = Sweep(
            scope=sc,
            op=op,
            backend=str(part["backend"].iloc[-1]),
            ranks=int(widest["ranks"]),
            nodes=int(widest["nodes"]),
            groups=int(part["group"].nunique()),
            sizes=sizes,
            busbw=tuple(float(x) for x in med),
            hosts=tuple(sorted(hosts_in(part))),
            cv=tuple(float(cvs[s]) if s in cvs.index else None for s in sizes),
        )
    return curves, wrong


def main_op(curves: dict[tuple[str, str], Sweep], scope: str, prefer: str = "all_reduce") -> Sweep | None:
    from reports.records import OPS

    if (scope, prefer) in curves:
        return curves[(scope, prefer)]
    return next((curves[(scope, op)] for op in OPS if (scope, op) in curves), None)


def per_host(df: pd.DataFrame, scope: str = "intra-node") -> pd.DataFrame:
    """busbw per host at each op's largest size in `scope` (from `shown` rows; one row per
    host and op), sorted slowest first: where a bad node shows up."""
    import pandas as pd

    part = df[df["scope"] == scope] if not df.empty else df
    if part.empty:
        return pd.DataFrame(columns=["op", "host", "bytes", "busbw"])
    top = part[part["bytes"] == part.groupby("op", observed=True)["bytes"].transform("max")]
    out = (
        top.groupby(["op", "host"], sort=True, observed=True)
        .agg(bytes=("bytes", "max"), busbw=("busbw_GBps", "mean"))
        .reset_index()
    )
    out = out.assign(op=out["op"].astype(str).astype(object), host=out["host"].astype(str).astype(object))
    return out.sort_values(["op", "busbw", "host"], kind="stable").reset_index(drop=True)


def expected_for(scope: str, nodes: int, expected: dict[str, float]) -> float | None:
    """The advertised busbw a sweep is drawn against: world spans nodes -> inter-node."""
    if scope == "world":
        scope = "inter-node" if nodes > 1 else "intra-node"
    comp = SCOPE_COMPONENT.get(scope)
    return expected.get(comp) if comp else None
