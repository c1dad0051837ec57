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

from reports.evidence.grouped import Groups, codes
from reports.shared.records import NET_SCOPES, per_node
from reports.shared.units import format_size

if TYPE_CHECKING:
    import pandas as pd

PLATEAU_SIZES = 3
# the swept scopes in the report's order (groups records are a search, replayed in evidence/groups.py)
SCOPE_ORDER = tuple(s for s in NET_SCOPES if s != "groups")
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
    from_world: bool = False  # judged: taken from a world sweep (its scope is the link it crossed)

    @property
    def label(self) -> str:
        r, n = self.ranks, self.nodes
        return (
            f"{self.op} · {r} rank{'s' if r != 1 else ''} on {n} node{'s' if n != 1 else ''} · {self.backend}"
        )

    @property
    def ranks_per_node(self) -> int:
        return per_node(self.ranks, self.nodes)

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
    # groups by (scope, op, backend, ranks, bytes) in name and number order, as pandas'
    # groupby(sort=True) gave them (grouped.py: the same medians); a missing name is no group
    (scope, scopes), (op, ops), (backend, backends) = (codes(df[c]) for c in ("scope", "op", "backend"))
    ranks, size = df["ranks"].to_numpy(dtype=np.int64), df["bytes"].to_numpy(dtype=np.int64)
    keep = (scope >= 0) & (op >= 0) & (backend >= 0)
    if not keep.all():
        scope, op, backend, ranks, size = (x[keep] for x in (scope, op, backend, ranks, size))
    wrong = df["wrong"].to_numpy(dtype=np.int64)[keep]
    ok = wrong == 0
    bus = np.where(ok, df["busbw_GBps"].to_numpy(dtype=float)[keep], np.nan)
    alg = np.where(ok, df["algbw_GBps"].to_numpy(dtype=float)[keep], np.nan)
    group, nodes = df["group"].to_numpy(dtype=np.int64)[keep], df["nodes"].to_numpy(dtype=np.int64)[keep]
    per_size = Groups(scope, op, backend, ranks, size)
    med = {
        "t": per_size.median(df["time_s"].to_numpy(dtype=float)[keep]),
        "alg": per_size.median(alg),
        "bus": per_size.median(bus),
        "bus_min": per_size.min(bus),
    }
    groups, wrongs = per_size.nunique(group), per_size.sum(wrong)
    sizes = per_size.first(size)
    # a sweep's sizes are contiguous groups (key order): the sweeps are their runs
    keys = [k[per_size.rows[per_size.starts]] for k in (scope, op, backend, ranks)]
    change = np.zeros(len(per_size), dtype=bool)
    change[:1] = True
    for k in keys:
        change[1:] |= k[1:] != k[:-1]
    whole = per_size.runs(change)
    whole_nodes, whole_groups = whole.max(nodes), whole.nunique(group)
    bounds = np.append(np.flatnonzero(change), len(per_size))
    out: list[Sweep] = []
    for k, (a, b) in enumerate(zip(bounds[:-1], bounds[1:])):
        row = whole.rows[whole.starts[k]]
        out.append(
            Sweep(
                scope=str(scopes[scope[row]]),
                op=str(ops[op[row]]),
                backend=str(backends[backend[row]]),
                ranks=int(ranks[row]),
                nodes=int(whole_nodes[k]),
                groups=int(whole_groups[k]),
                sizes=tuple(int(x) for x in sizes[a:b]),
                busbw=tuple(float(x) for x in med["bus"][a:b]),
                time_us=tuple(float(x) * 1e6 for x in med["t"][a:b]),
                algbw=tuple(float(x) for x in med["alg"][a:b]),
                busbw_min=tuple(float(x) for x in med["bus_min"][a:b]),
                groups_per_size=tuple(int(x) for x in groups[a:b]),
                wrong=tuple(int(x) for x in wrongs[a:b]),
            )
        )
    order = {s: i for i, s in enumerate(SCOPE_ORDER)}
    return sorted(out, key=lambda s: (order.get(s.scope, 9), s.op != "all_reduce", s.op, s.backend, s.ranks))


def judged(frame: pd.DataFrame) -> tuple[dict[tuple[str, str], Sweep], int]:
    """The curves judged per (effective scope, op), and how many records were left out
    because their correctness check failed (their bandwidth means nothing)."""
    if frame.empty:
        return {}, 0
    import pandas as pd

    wrong_col = frame["wrong"].to_numpy()
    wrong = int((wrong_col != 0).sum())
    (scope, scopes), (op, ops), (backend, backends) = (_names(frame[c]) for c in ("scope", "op", "backend"))
    busbw, nodes = frame["busbw_GBps"].to_numpy(dtype=float), frame["nodes"].to_numpy(dtype=np.int64)
    # a NaN or infinite figure never becomes a bandwidth (the reader refuses them too)
    use = (
        (wrong_col == 0)
        & (frame["time_s"].to_numpy(dtype=float) > 0)
        & np.isfinite(busbw)
        & ~np.isin(scopes, ["pair", "groups"])[scope]
        & (frame["ranks"].to_numpy() >= 2)
    )
    rows = np.flatnonzero(use)
    # the effective scope: a world sweep is intra-node on one node and crosses nodes otherwise
    names = np.append(scopes, np.array(["intra-node", "inter-node"], dtype=object))
    from_world = scope[rows] == _index(scopes, "world")
    eff = np.where(from_world, len(scopes) + (nodes[rows] > 1), scope[rows])
    rails = ~from_world & (scope[rows] == _index(scopes, "inter-node"))
    parts: list[tuple[tuple[str, str, bool], np.ndarray, np.ndarray, np.ndarray]] = []
    # keys in the order the records first show them (the findings' order), rails after
    sizes_all = frame["bytes"].to_numpy(dtype=np.int64)
    plain = rows[~rails]
    for part in _first_seen(eff[~rails], op[plain], from_world[~rails].astype(np.int64), rows=plain):
        per_size = Groups(sizes_all[part])
        w = bool(scope[part[0]] == _index(scopes, "world"))
        sc = str(names[len(scopes) + (nodes[part[0]] > 1)] if w else names[scope[part[0]]])
        parts.append(
            (
                (sc, str(ops[op[part[0]]]), w),
                part,
                per_size.first(sizes_all[part]),
                per_size.median(busbw[part]),
            )
        )
    run, _ = codes(frame["run_id"])
    in_place = frame["in_place"].to_numpy().astype(np.int64)
    railed = rows[rails]
    for part in _first_seen(op[railed], rows=railed):
        # the rails of a run run at once: the slowest rail per run and size, then the median over runs
        ok = part[run[part] >= 0]
        per_run = Groups(sizes_all[ok], run[ok], in_place[ok])
        mins, run_size = per_run.min(busbw[ok]), per_run.first(sizes_all[ok])
        per_size = Groups(run_size)
        parts.append(
            (
                ("inter-node", str(ops[op[part[0]]]), False),
                part,
                per_size.first(run_size),
                per_size.median(mins),
            )
        )
    host_index = _Hosts(frame)
    ranks, groups = frame["ranks"].to_numpy(dtype=np.int64), frame["group"].to_numpy()
    cv_all = frame["time_cv"].to_numpy(dtype=float)
    curves: dict[tuple[str, str], Sweep] = {}
    # world-derived first, so an explicit sweep of the same (scope, op) replaces it
    for (sc, op_name, w), part, sizes, med in sorted(parts, key=lambda p: p[0][2], reverse=True):
        widest = part[np.lexsort((nodes[part], ranks[part]))[-1]]  # stable: the last of the widest
        cv = cv_all[part]
        valid = ~np.isnan(cv) & (cv >= 0)
        cvs = pd.Series(cv[valid]).groupby(sizes_all[part][valid]).mean() if valid.any() else None
        curves[(sc, op_name)] = Sweep(
            scope=sc,
            op=op_name,
            backend=str(backends[backend[part[-1]]]),
            ranks=int(ranks[widest]),
            nodes=int(nodes[widest]),
            groups=int(len(pd.unique(groups[part]))),
            sizes=tuple(int(b) for b in sizes),
            busbw=tuple(float(x) for x in med),
            hosts=tuple(sorted(host_index.named_by(part))),
            cv=tuple(float(cvs[s]) if cvs is not None and s in cvs.index else None for s in sizes),
            from_world=w,
        )
    return curves, wrong


def _names(col: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """codes() of a name column; a missing name is the string "nan" / "None", as str() makes it."""
    got = codes(col)
    return got if (got[0] >= 0).all() else codes(col.astype(str).astype(object))


def _index(names: np.ndarray, name: str) -> int:
    """The code of `name` among `names`, -2 (no row's code) when absent."""
    hit = np.flatnonzero(names == name)
    return int(hit[0]) if len(hit) else -2


def _first_seen(*keys: np.ndarray, rows: np.ndarray) -> list[np.ndarray]:
    """`rows` grouped by `keys`, the groups in the order their first row comes, each in row order."""
    if not len(rows):
        return []
    g = Groups(*keys)
    firsts = g.rows[g.starts]
    return [rows[g.rows[g.starts[k] : g.starts[k] + g.sizes[k]]] for k in np.argsort(firsts, kind="stable")]


class _Hosts:
    """Every host named by a set of rows (table.hosts_in, by codes): the first host of a row
    naming any, the second of a two-host row, the tuple of a row naming more."""

    def __init__(self, frame: pd.DataFrame) -> None:
        self.host, self.host_names = codes(frame["host"])
        self.host[frame["n_hosts"].to_numpy() <= 0] = -1
        self.host2, self.host2_names = codes(frame["host2"])
        many = frame["hosts"]
        self.is_many = many.notna().to_numpy()  # a mask: indexing by rows costs no sort
        self.many = many.to_numpy(dtype=object)

    def named_by(self, rows: np.ndarray) -> set[str]:
        out: set[str] = set()
        for code, names in ((self.host[rows], self.host_names), (self.host2[rows], self.host2_names)):
            seen = np.bincount(code[code >= 0], minlength=len(names)) > 0  # a count, not a sort
            out.update(str(h) for h in names[seen])
        for t in {id(t): t for t in self.many[rows[self.is_many[rows]]]}.values():
            out.update(t)
        return out


def main_op(curves: dict[tuple[str, str], Sweep], scope: str, prefer: str = "all_reduce") -> Sweep | None:
    from reports.shared.records import OPS

    if (scope, prefer) in curves:
        return curves[(scope, prefer)]
    return next((curves[(scope, op)] for op in OPS if (scope, op) in curves), None)


def per_host(df: pd.DataFrame, scope: str = "intra-node") -> pd.DataFrame:
    """busbw per host at each op's largest size in `scope` (from `shown` rows; one row per
    host and op), sorted slowest first: where a bad node shows up."""
    import pandas as pd

    # the four columns used, then the rows: at 10,000 nodes every column of ~1.75M rows was copied
    part = (
        df[["op", "host", "bytes", "busbw_GBps"]][(df["scope"] == scope).to_numpy()] if not df.empty else df
    )
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
