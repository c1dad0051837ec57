"""The figures of a run that a baseline keeps (pure): one Figure per thing a later run can
measure again, each with the identity of how it was measured (docs/check.md).

A figure's spread is the spread of its own repeats only: records of one tool, one scope, one
path, one number of ranks, nodes, writers or workers and one block size. Two measurements that
differ in any of these are two figures, never one figure with a wide spread.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from reports.evidence import Evidence
from reports.judging.fleet.baseline import Baseline, Figure, judge
from reports.shared.findings import Component, Finding
from reports.shared.records import IoRecord, procs_per_node
from reports.shared.storage_rule import path_role


def _spread(rows: Any) -> list[float]:
    """busbw of each repeat at the figure's size (the run's spread; one record: none)."""
    return [float(v) for v in rows["busbw_GBps"]]


def _slowest(rows: Any) -> list[float]:
    """Each record's busbw one standard deviation of its iterations slower (`time_cv`: the
    iterations' spread the record keeps, docs/contract.md): busbw / (1 + cv). The noise inside
    one record, so that a figure swept once still has the spread its iterations showed."""
    out = []
    for bw, cv in zip(rows["busbw_GBps"], rows["time_cv"], strict=True):
        if bw == bw and cv is not None and cv == cv and cv > 0:
            out.append(float(bw) / (1 + float(cv)))
    return out


def _sweeps(ev: Evidence) -> list[Figure]:
    curves, df = ev.curves, ev.net.frame
    out = []
    for (scope, op), c in curves.items():
        if scope == "intra-node" and len(c.hosts) <= 1:
            continue  # one node's sweep: its node-intra figure says it
        size, bw = c.plateau()
        comp: Component = "intra-node network" if scope == "intra-node" else "inter-node network"
        # the repeats of this sweep only: same op, size, tool, ranks and nodes
        at = df[
            (df["op"] == op)
            & (df["bytes"] == size)
            & (df["wrong"] == 0)
            & (df["backend"] == c.backend)
            & (df["ranks"] == c.ranks)
            & (df["nodes"] == c.nodes)
        ]
        vals = [v for v in _spread(at) if v > 0] or [bw]
        lows = [v for v in _slowest(at) if v > 0]
        out.append(
            Figure(
                kind="sweep",
                component=comp,
                what=f"{scope} {op} busbw",
                value=bw,
                low=min(vals + lows),
                high=max(vals),
                scope=scope,
                op=op,
                bytes=size,
                hosts=c.hosts,
                backend=c.backend,
                ranks=c.ranks,
                nodes=c.nodes,
            )
        )
    return out


def _node_intra(ev: Evidence) -> list[Figure]:
    """Each node's own intra-node plateau: records on one host (an `intra-node` sweep, or a
    `world` sweep of one node, as `stoker check` and `stoker run` take), one figure per tool
    and number of ranks."""
    df = ev.net.frame
    if df.empty:
        return []
    rows = df[(df["n_hosts"] == 1) & (df["wrong"] == 0) & (df["ranks"] >= 2) & (df["time_s"] > 0)]
    rows = rows[rows["scope"].isin(("intra-node", "world"))]
    out = []
    keys = [rows["host"].astype(str), rows["op"].astype(str), rows["backend"].astype(str), rows["ranks"]]
    for (host, op, backend, ranks), part in rows.groupby(keys, sort=True):
        size = int(part["bytes"].max())
        at = part[part["bytes"] == size]
        vals = _spread(at)
        lows = [v for v in _slowest(at) if v > 0]
        out.append(
            Figure(
                kind="node-intra",
                component="node",
                what=f"intra-node {op} busbw",
                value=max(vals),
                low=min(vals + lows),
                high=max(vals),
                op=op,
                host=host,
                bytes=size,
                hosts=(host,),
                backend=backend,
                ranks=int(ranks),
            )
        )
    return out


def _node_pairs(ev: Evidence) -> list[Figure]:
    scores = ev.pairs.scores
    return [
        Figure(
            kind="node-pair",
            component="node",
            what="best pair busbw (its own link)",
            value=v,
            scope="pair",
            host=h,
            hosts=(h,),
        )
        for h, v in sorted(scores.items())
    ]


# a storage figure's identity: scope, path, workload, direction, tool, processes per node, block
_IoKey = tuple[str, str, str, str, str, int, int, int]


def _io_key(r: IoRecord) -> _IoKey:
    per_node = procs_per_node(r)
    data = r.extra.get("data_bytes_per_worker")  # the dataloader's data set a worker read
    data = data if isinstance(data, int) and not isinstance(data, bool) and data > 0 else 0
    return (r.scope, r.path, r.workload, r.direction, r.backend, per_node, r.block_size, data)


def _storage(ev: Evidence) -> list[Figure]:
    best: dict[tuple[_IoKey, int], list[float]] = {}
    per_host: dict[tuple[_IoKey, str], list[float]] = {}
    for r in ev.io:
        if r.failed or r.bw_GBps <= 0 or r.cache_suspect:
            continue  # a cached figure measured memory, not the storage: no baseline
        key = _io_key(r)
        low = _repeat_low(r)  # the lowest of the record's own repeats (torch.save's saves)
        if len(r.per_host_bw_GBps) > 1:  # one node's record: its node-storage figure says it
            best.setdefault((key, r.nodes), []).extend([r.bw_GBps, *low])
        for h, v in r.per_host_bw_GBps.items():
            share = v / r.bw_GBps if r.bw_GBps > 0 else 1.0
            per_host.setdefault((key, h), []).extend([v, *(x * share for x in low)])
    aggregate = [_storage_figure(key, vals, nodes=n) for (key, n), vals in sorted(best.items())]
    return aggregate + [_storage_figure(key, vals, host=h) for (key, h), vals in sorted(per_host.items())]


def _repeat_low(r: IoRecord) -> list[float]:
    """The lowest repeat a record of several keeps (`min_GBps`, reports/shared/spread.py), and its
    figure one standard deviation of fio's bandwidth samples lower (`bw_cv`: bw / (1 + cv))."""
    out = []
    low = r.extra.get("min_GBps")
    if isinstance(low, (int, float)) and 0 < low <= r.bw_GBps:
        out.append(float(low))
    cv = r.extra.get("bw_cv")
    if isinstance(cv, (int, float)) and cv > 0:
        out.append(r.bw_GBps / (1 + float(cv)))
    return out


def _storage_figure(key: _IoKey, vals: list[float], host: str | None = None, nodes: int = 0) -> Figure:
    """A storage figure (the aggregate, or one host's share with `host`), at its best repeat;
    a run's own scratch dir kept by its role (reports/shared/storage_rule.py `path_role`)."""
    scope, path, wl, d, backend, procs, block, data = key
    role = path_role(path)
    return Figure(
        kind="storage" if host is None else "node-storage",
        component=("local storage" if scope == "local" else "shared storage") if host is None else "node",
        what=f"{wl} {d} on {f'{scope} {role}' if role else path}"
        + ("" if backend == "fio" else f" ({backend})"),
        role=role,
        value=max(vals),
        low=min(vals),
        high=max(vals),
        scope=scope,
        path=path,
        workload=wl,
        direction=d,
        host=host or "",
        hosts=() if host is None else (host,),
        backend=backend,
        procs=procs,
        block=block,
        data=data,
        nodes=nodes,
    )


def _host_links(host_records: Sequence[Mapping[str, Any]]) -> list[Figure]:
    out = []
    for r in host_records:
        if r.get("component") != "host link":
            continue
        for field in ("h2d_pinned_GBps", "d2h_pinned_GBps"):
            v = r.get(field)
            if isinstance(v, (int, float)) and v > 0:
                host, dev = str(r.get("host", "")), str(r.get("device", ""))
                out.append(
                    Figure(
                        kind="host-link",
                        component="host link",
                        what=f"{field.split('_')[0]} pinned copy",
                        value=float(v),
                        op=field.split("_")[0],
                        host=host,
                        device=dev,
                        hosts=(host,),
                    )
                )
    return out


def _compute(records: Sequence[Mapping[str, Any]]) -> list[Figure]:
    """Each device's best-shape median TFLOPS per dtype (the statistic judging/compute.py
    judges), keyed by host, device slot and dtype: a GPU swapped into the slot is held to what
    the slot gave at acceptance. The spread is the best shape's median and maximum."""
    from reports.judging.node.compute import devices

    out = []
    for d in devices(records):
        slot = f"gpu{d.gpu}" if d.gpu is not None else f"cpu{d.proc}"
        high = d.max_tflops if isinstance(d.max_tflops, (int, float)) and d.max_tflops >= d.tflops else None
        out.append(
            Figure(
                kind="compute",
                component="gpu",
                what=f"{d.dtype} matmul TFLOPS",
                value=d.tflops,
                unit="TFLOPS",
                low=d.tflops,
                high=None if high is None else float(high),
                op=d.dtype,
                host=d.host,
                device=slot,
                hosts=(d.host,),
            )
        )
    return out


def run_figures(ev: Evidence) -> list[Figure]:
    """Every figure of a run that a baseline keeps and a later run is judged on."""
    return [
        *_sweeps(ev),
        *_node_intra(ev),
        *_node_pairs(ev),
        *_storage(ev),
        *_host_links(ev.host),
        *_compute(ev.compute),
    ]


def figures(ev: Evidence) -> list[Figure]:
    """Every figure of a run that a baseline keeps and a later run is judged on."""
    return run_figures(ev)


def judge_evidence(baseline: Baseline, ev: Evidence) -> list[Finding]:
    """The one call the judgement makes with --baseline: this run's figures against the baseline."""
    return judge(baseline, figures(ev))
