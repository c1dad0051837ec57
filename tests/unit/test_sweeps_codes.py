"""The sweeps (recorded, judged) and the per-node intra-node findings, computed on integer codes
(reports/evidence/grouped.py), are what the pandas groupby versions gave, to the bit and in the
same order. Those versions are kept here as the oracle; hypothesis feeds both record sets of
every shape a report meets (wrong elements, in-place twins, NaN figures on the line path,
world sweeps on one node, rails of several runs, iteration CVs, several ops and backends), on
the line path (object columns) and the column path (categorical columns)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reports.evidence.sweeps import SCOPE_ORDER, Sweep, judged, recorded, shown
from reports.judging.network.localise import intra_node_findings
from reports.shared.outliers import low_outliers
from reports.shared.records import to_dict
from reports.table.read import NetTable, hosts_in, read_records
from tests.unit.recordgen import net


def oracle_recorded(df: pd.DataFrame) -> list[Sweep]:
    keys = ["scope", "op", "backend", "ranks", "bytes"]
    ok = df["wrong"] == 0
    df = df.assign(bus=df["busbw_GBps"].where(ok), alg=df["algbw_GBps"].where(ok))
    agg = {"t": ("time_s", "median"), "alg": ("alg", "median"), "bus": ("bus", "median")}
    agg |= {"bus_min": ("bus", "min"), "groups": ("group", "nunique"), "wrong": ("wrong", "sum")}
    g = df.groupby(keys, sort=True, observed=True).agg(**agg).reset_index()
    whole = df.groupby(keys[:4], sort=True, observed=True).agg(
        nodes=("nodes", "max"), groups=("group", "nunique")
    )
    out = []
    for key, part in g.groupby(keys[:4], sort=True, observed=True):
        nodes, groups = whole.loc[key]
        out.append(
            Sweep(
                scope=str(key[0]),
                op=str(key[1]),
                backend=str(key[2]),
                ranks=int(key[3]),
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


def oracle_judged(frame: pd.DataFrame) -> tuple[dict[tuple[str, str], Sweep], int]:
    wrong = int((frame["wrong"] != 0).sum())
    use = frame[
        (frame["wrong"] == 0)
        & (frame["time_s"] > 0)
        & np.isfinite(frame["busbw_GBps"].to_numpy(dtype=float))
        & ~frame["scope"].isin(("pair", "groups"))
        & (frame["ranks"] >= 2)
    ]
    use = use.assign(**{c: use[c].astype(str).astype(object) for c in ("scope", "op", "backend")})
    from_world = use["scope"].to_numpy() == "world"
    eff = np.where(
        from_world, np.where(use["nodes"].to_numpy() <= 1, "intra-node", "inter-node"), use["scope"]
    )
    use = use.assign(eff=eff.astype(object), from_world=from_world)
    rails = use["eff"].eq("inter-node") & ~use["from_world"]
    parts: list[Any] = []
    for (sc, op, w), part in use[~rails].groupby(["eff", "op", "from_world"], sort=False):
        parts.append(
            ((str(sc), str(op), bool(w)), part, part.groupby("bytes", sort=False)["busbw_GBps"].median())
        )
    for op, part in use[rails].groupby("op", sort=False):
        per_run = part.groupby(["bytes", "run_id", "in_place"], sort=False, observed=True)["busbw_GBps"].min()
        parts.append(
            (("inter-node", str(op), False), part, per_run.groupby(level="bytes", sort=False).median())
        )
    curves = {}
    for (sc, op, w), part, med in sorted(parts, key=lambda p: p[0][2], reverse=True):
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
            from_world=w,
        )
    return curves, wrong


def oracle_intra_node(df: pd.DataFrame) -> list[tuple[str, str, float, float]]:
    rows = df[(df["scope"] == "intra-node") & (df["n_hosts"] == 1) & (df["wrong"] == 0)]
    out = []
    # like with like (docs/reports.md): a fleet is the hosts measured with one op, tool and
    # rank count; by op name, then tool, then ranks
    keys = [rows["op"].astype(str), rows["backend"].astype(str), rows["ranks"].astype(int)]
    for (op, _, _), recs in rows.groupby(keys, sort=True):
        top = recs[recs["bytes"] == int(recs["bytes"].max())]
        best = top.groupby(top["host"].astype(str), sort=False)["busbw_GBps"].max().clip(lower=0.0)
        per_host = {str(h): float(v) for h, v in best.items()}
        med, low = low_outliers(per_host)
        out += [(f"intra-node {op} busbw", h, per_host[h], med) for h in low]
    return out


HOSTS = ["n1", "n2", "n3", "n4", "n5"]


@st.composite
def record_sets(draw: st.DrawFn) -> list[Any]:
    recs = []
    for _ in range(draw(st.integers(1, 40))):
        scope = draw(st.sampled_from(["world", "intra-node", "inter-node", "pair", "groups"]))
        k = {"intra-node": 1, "pair": 2}.get(scope, draw(st.integers(1, 4)))
        hosts = tuple(draw(st.permutations(HOSTS))[:k])
        r = net(
            scope,
            draw(st.sampled_from(["all_reduce", "all_gather", "sendrecv"])),
            draw(st.sampled_from([1 << 20, 1 << 24, 1 << 30])),
            draw(st.one_of(st.floats(0, 400), st.sampled_from([10.0, 20.0]))),
            hosts,
            group=draw(st.integers(0, 3)),
            ranks=draw(st.sampled_from([1, 2, 8, 16])),
            wrong=draw(st.sampled_from([0, 0, 0, 2])),
            in_place=draw(st.booleans()),
            backend=draw(st.sampled_from(["nccl", "gloo"])),
        )
        extra = {"run_id": draw(st.sampled_from(["r1", "r2"])), "nodes": len(hosts)}
        if draw(st.booleans()):
            extra["time_cv"] = draw(st.sampled_from([0.01, 0.3, -1.0]))
        recs.append(r.__class__(**{**{f: getattr(r, f) for f in r.__dataclass_fields__}, **extra}))
    return recs


def _check(frame: pd.DataFrame) -> None:
    assert repr(recorded(shown(frame))) == repr(oracle_recorded(shown(frame)))  # NaN medians: by repr
    got, want = judged(frame), oracle_judged(frame)
    assert repr(got) == repr(want)  # the same curves, figures and order (NaN medians included)
    mine = [(f.check, f.hosts[0], f.measured, f.expected) for f in intra_node_findings(frame)]
    assert mine == oracle_intra_node(frame)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(record_sets())
def test_line_path_frames(recs: list[Any]) -> None:
    _check(NetTable.of(recs).frame)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(record_sets())
def test_column_path_frames(tmp_path_factory: Any, recs: list[Any]) -> None:
    d = Path(tmp_path_factory.mktemp("codes"))
    with open(d / "net.jsonl", "w") as fh:
        for r in recs:
            fh.write(json.dumps(to_dict(r)) + "\n")
    rs = read_records(d)
    assert rs.net._table is not None  # the column path
    _check(rs.net.frame)


def test_a_nan_figure_on_the_line_path_is_no_bandwidth() -> None:
    recs = [net("intra-node", "all_reduce", 1 << 30, v, ("n1",), ranks=8) for v in (float("nan"), 5.0, 7.0)]
    _check(NetTable.of(recs).frame)
    curve = judged(NetTable.of(recs).frame)[0][("intra-node", "all_reduce")]
    assert curve.busbw == (6.0,)
