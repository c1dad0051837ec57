"""What a report shows, as numbers (pure, pandas): the sweeps per scope, per-host figures,
storage rows. Both renderers (markdown, HTML with plots) and `stoker compare` read these,
so the tables and the plots can never disagree.

Statistic: each record's time is the mean across ranks of back-to-back iterations (as
nccl-tests -a 1). Where one scope has several groups (intra-node: one group per node), a
sweep row shows the median across groups (as the judgement uses) and the slowest group.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from reports.columns import net_columns
from reports.judging.compare import PLATEAU_SIZES
from reports.records import IoRecord, NetRecord

SCOPE_ORDER = ("world", "intra-node", "inter-node", "pair")
# Which advertised figure a scope is held against (judge.expected keys are finding components).
SCOPE_COMPONENT = {"intra-node": "intra-node network", "inter-node": "inter-node network"}
_NET_COLS = (
    "scope",
    "op",
    "backend",
    "ranks",
    "nodes",
    "bytes",
    "time_s",
    "algbw_GBps",
    "busbw_GBps",
    "group",
    "host",
    "wrong",
)


@dataclass(frozen=True, kw_only=True, slots=True)
class Sweep:
    """One op in one scope: busbw by message size, aggregated over groups and repeats."""

    scope: str
    op: str
    backend: str
    ranks: int
    nodes: int
    groups: int
    table: pd.DataFrame  # bytes, time_us, algbw, busbw (medians), busbw_min, groups, wrong; by bytes

    @property
    def label(self) -> str:
        return f"{self.op} · {self.ranks} rank{'s' if self.ranks != 1 else ''} on {self.nodes} node{'s' if self.nodes != 1 else ''} · {self.backend}"

    @property
    def plateau(self) -> tuple[int, float]:
        """(size, busbw): the best per-size median among the largest sizes, the same rule
        as the judgement (reports.judging.compare); small sizes measure latency, not bandwidth."""
        top = self.table.tail(PLATEAU_SIZES).dropna(subset=["busbw"])
        if top.empty:
            return int(self.table["bytes"].iloc[-1]), float("nan")
        best = top.loc[top["busbw"].idxmax()]
        return int(best["bytes"]), float(best["busbw"])


def net_frame(net: Sequence[NetRecord]) -> pd.DataFrame:
    """One row per record, out-of-place results only where a size also has in-place ones
    (nccl-tests prints both; they measure the same path)."""
    cols = net_columns(net)
    if cols.empty:
        return pd.DataFrame(columns=[*_NET_COLS])
    df = cols[[*_NET_COLS, "in_place"]].copy()
    for c in ("scope", "op", "backend", "host"):  # plain Python strings, as the renderers expect
        df[c] = df[c].astype(object)
    keys = ["scope", "op", "backend", "ranks", "bytes"]
    has_oop = ~df.groupby(keys)["in_place"].transform("min").astype(
        bool
    )  # min is False where any is out-of-place
    return df[~(df["in_place"] & has_oop)].drop(columns="in_place")


def sweeps(df: pd.DataFrame) -> list[Sweep]:
    """Sweeps in a fixed order: scope (world, intra, inter, pair), op, backend, ranks."""
    if df.empty:
        return []
    out: list[Sweep] = []
    keys = ["scope", "op", "backend", "ranks"]
    for key, part in df.groupby(keys, sort=True):
        scope, op, backend, ranks = key
        # Results that failed the correctness check carry no bandwidth (as in reports.judging.compare).
        good = part.assign(
            busbw_GBps=part["busbw_GBps"].where(part["wrong"] == 0),
            algbw_GBps=part["algbw_GBps"].where(part["wrong"] == 0),
        )
        t = (
            good.groupby("bytes", sort=True)
            .agg(
                time_us=("time_s", lambda s: float(s.median()) * 1e6),
                algbw=("algbw_GBps", "median"),
                busbw=("busbw_GBps", "median"),
                busbw_min=("busbw_GBps", "min"),
                groups=("group", "nunique"),
                wrong=("wrong", "sum"),
            )
            .reset_index()
        )
        out.append(
            Sweep(
                scope=str(scope),
                op=str(op),
                backend=str(backend),
                ranks=int(ranks),
                nodes=int(part["nodes"].max()),
                groups=int(part["group"].nunique()),
                table=t,
            )
        )
    order = {s: i for i, s in enumerate(SCOPE_ORDER)}
    return sorted(out, key=lambda s: (order.get(s.scope, 9), s.op != "all_reduce", s.op, s.backend, s.ranks))


def per_host(df: pd.DataFrame, scope: str = "intra-node") -> pd.DataFrame:
    """busbw per host at each op's largest size in `scope` (one row per host and op),
    sorted slowest first: where a bad node shows up."""
    part = df[df["scope"] == scope] if not df.empty else df
    if part.empty:
        return pd.DataFrame(columns=["op", "host", "bytes", "busbw"])
    top = part[part["bytes"] == part.groupby("op")["bytes"].transform("max")]
    out = (
        top.groupby(["op", "host"], sort=True)
        .agg(bytes=("bytes", "max"), busbw=("busbw_GBps", "mean"))
        .reset_index()
    )
    return out.sort_values(["op", "busbw", "host"], kind="stable").reset_index(drop=True)


def io_frame(io: Sequence[IoRecord]) -> pd.DataFrame:
    rows = [
        {
            "workload": r.workload,
            "direction": r.direction,
            "path": r.path,
            "scope": r.scope,
            "procs": r.procs,
            "nodes": r.nodes,
            "bw": r.bw_GBps,
            "iops": r.iops,
            "p50_ms": r.lat_ms.get("p50"),
            "p99_ms": r.lat_ms.get("p99"),
            "backend": r.backend,
            "block": r.block_size,
            "bytes": r.bytes,
            "op": str(r.extra.get("op", "")),  # metadata records name their operation (create, stat, ...)
            "cache_suspect": r.cache_suspect,
            "failed": r.failed,
        }
        for r in io
    ]
    df = pd.DataFrame(rows)
    if df.empty:
        return df
    keys = ["scope", "path", "workload", "direction", "op", "backend", "procs", "block"]
    return df.sort_values(keys, kind="stable").reset_index(drop=True)


def expected_for(scope: str, nodes: int, expected: dict[str, float]) -> float | None:
    """The advertised busbw a sweep is drawn against: world spans nodes -> inter-node."""
    if scope == "world":
        scope = "inter-node" if nodes > 1 else "intra-node"
    comp = SCOPE_COMPONENT.get(scope)
    return expected.get(comp) if comp else None
