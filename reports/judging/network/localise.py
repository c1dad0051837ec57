"""Localisation: name the slow node or link (pure findings from evidence).

The statistics — the pair matrix (reports.evidence.pairs), node scores and the fleet outlier
rule (reports.shared.outliers) — are computed before; here they become findings. A node whose every pair is slow is a
`node` finding; a slow path between two otherwise healthy nodes names both ends in one
`link` finding, never two node findings. Per-node intra-node busbw and per-host storage
bandwidth get the same outlier test. A fleet comparison needs 3 hosts.

A fleet is made of figures measured the same way (reports.judging.fleet.baseline.IDENTITY): an
intra-node figure with the same op, tool and ranks, at the largest size they all share; a
storage figure with the hosts of one record (one path, tool, writers or workers, block size).
Nodes measured differently are never outliers of each other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pandas as pd

from reports.evidence.grouped import Groups, codes
from reports.evidence.pairs import PairEvidence
from reports.judging.fleet.baseline import IDENTITY
from reports.shared.findings import Finding
from reports.shared.outliers import (
    DEFAULT_MIN_GAP,
    PairValues,
    low_outliers,
    node_scores,
    slow_link_values,
    slow_nodes,
)
from reports.shared.records import IoRecord


def _fmt(x: float) -> str:
    return f"{x:.3g}"


def pair_findings(
    pe: PairEvidence, expected_pair_GBps: float | None = None, min_gap: float = DEFAULT_MIN_GAP
) -> list[Finding]:
    """Rail by rail (each rail is its own fleet): a host or link slow on every rail it was
    tested on is named alone; one slow on some rails only is named with each slow `rail`."""
    rails = pe.rails or {0: pe.values}
    if len(rails) == 1:
        return _one_rail(pe, next(iter(rails.values())), expected_pair_GBps, min_gap)
    per = {j: _one_rail(pe, pv, expected_pair_GBps, min_gap) for j, pv in sorted(rails.items())}
    tested: dict[tuple[str, ...], list[int]] = {}
    for j, pv in rails.items():
        for h in node_scores(pv):
            tested.setdefault((h,), []).append(j)
        for k in pv:
            tested.setdefault(k, []).append(j)
    slow_on: dict[tuple[str, str, tuple[str, ...]], list[int]] = {}
    for j, found in per.items():
        for f in found:
            slow_on.setdefault((f.component, f.check, f.hosts), []).append(j)
    out: list[Finding] = []
    for (component, _, hosts), js in slow_on.items():
        first = next(f for f in per[js[0]] if (f.component, f.hosts) == (component, hosts))
        if len(js) == len(tested.get(hosts, js)):  # every rail it has: the node or the path
            out.append(replace(first, extra={**first.extra, "rails": js}))
            continue
        for j in js:
            f = next(f for f in per[j] if (f.component, f.hosts) == (component, hosts))
            out.append(_on_rail(f, j))
    return sorted(out, key=lambda f: (f.component != "node", f.hosts, f.extra.get("rail", -1)))


def _on_rail(f: Finding, rail: int) -> Finding:
    """A finding of one rail: the NIC of local rank `rail` on its host(s)."""
    return replace(
        f,
        extra={**f.extra, "rail": rail},
        message=f"Rail {rail} only (the NIC of local rank {rail}, nearest GPU {rail}; the other rails "
        f"reach full speed): {f.message}",
    )


def _one_rail(
    pe: PairEvidence, pairs: PairValues, expected_pair_GBps: float | None, min_gap: float
) -> list[Finding]:
    hosts, size = node_scores(pairs), pe.size
    if len(hosts) < 2:
        return []
    out: list[Finding] = []
    if len(hosts) == 2:
        ((k, v),) = pairs.items()
        if expected_pair_GBps and v < (1 - min_gap) * expected_pair_GBps:
            out.append(
                Finding(
                    component="link",
                    check="pair busbw",
                    status="below_spec",
                    measured=v,
                    expected=expected_pair_GBps,
                    unit="GB/s",
                    hosts=k,
                    extra={"bytes": size, "basis": "spec"},
                    message=f"The only pair, {k[0]}–{k[1]}, reaches {_fmt(v)} GB/s against {_fmt(expected_pair_GBps)} "
                    "GB/s expected; pair each with a third node to tell which end is slow.",
                )
            )
        return out
    for h, (ref, basis) in sorted(slow_nodes(pairs, expected_pair_GBps, min_gap).items()):
        partners = pe.confirmed.get(h, [])
        seen = f", confirmed with {', '.join(partners)}" if partners else ""
        against = (
            f"{_fmt(ref)} GB/s for the fleet's median node"
            if basis == "fleet"
            else f"{_fmt(ref)} GB/s expected"
        )
        out.append(
            Finding(
                component="node",
                check="pair busbw",
                status="below_spec",
                measured=hosts[h],
                expected=ref,
                unit="GB/s",
                hosts=(h,),
                extra={"bytes": size, "basis": basis, "confirmed_with": partners},
                message=f"{h} is slow with every partner (best pair {_fmt(hosts[h])} GB/s against {against}{seen}): "
                "check its NIC, cable and switch port, or drain it.",
            )
        )
    for (a, b), (v, ref) in sorted(slow_link_values(pairs, min_gap).items()):
        out.append(
            Finding(
                component="link",
                check="pair busbw",
                status="below_spec",
                measured=v,
                expected=ref,
                unit="GB/s",
                hosts=(a, b),
                extra={"bytes": size, "basis": "fleet"},
                message=f"The path between {a} and {b} is slow ({_fmt(v)} GB/s) while both reach {_fmt(ref)} GB/s "
                "with other nodes: check the cables, switch ports and routes between them.",
            )
        )
    return out


# -- per-node intra-node and storage ---------------------------------------------------
def intra_node_findings(df: pd.DataFrame, min_gap: float = DEFAULT_MIN_GAP) -> list[Finding]:
    """Per-node intra-node busbw (one `intra-node` record per host) against the fleet of the
    hosts measured alike (the op and the node-intra identity: tool and ranks): each host's best
    at the fleet's largest size. On codes (a 1,000-node frame has ~680k rows)."""
    (scope, scopes), (op, ops), (host, hosts) = (codes(df[c]) for c in ("scope", "op", "host"))
    rows = np.flatnonzero(
        np.isin(scope, np.flatnonzero(scopes == "intra-node"))
        & (df["n_hosts"].to_numpy() == 1)
        & (df["wrong"].to_numpy() == 0)
    )
    size_all, bw_all = df["bytes"].to_numpy(dtype=np.int64), df["busbw_GBps"].to_numpy(dtype=float)
    # the message size is the fleet's largest (below), every other identity field splits the fleet
    alike = [codes(df[f])[0] for f in IDENTITY["node-intra"] if f != "bytes"]
    fleet = Groups(op[rows], *(c[rows] for c in alike))
    out: list[Finding] = []
    for start, n in zip(fleet.starts.tolist(), fleet.sizes.tolist()):  # by op name, then tool, ranks
        recs = rows[fleet.rows[start : start + n]]
        k = op[recs[0]]
        size = int(size_all[recs].max())
        top = recs[size_all[recs] == size]
        per = Groups(host[top])
        best = np.clip(per.max(bw_all[top]), 0.0, None)
        names = [str(hosts[c]) if c >= 0 else "nan" for c in per.first(host[top]).tolist()]
        per_host = dict(zip(names, best.tolist()))
        med, low = low_outliers(per_host, min_gap)
        name = str(ops[k]) if k >= 0 else "nan"
        out += [
            Finding(
                component="node",
                check=f"intra-node {name} busbw",
                status="below_spec",
                measured=per_host[h],
                expected=med,
                unit="GB/s",
                hosts=(h,),
                extra={"bytes": size, "basis": "fleet", "op": name},
                message=f"{h}'s intra-node {name} reaches {_fmt(per_host[h])} GB/s against a fleet median of "
                f"{_fmt(med)} GB/s: check its GPU links (nvidia-smi topo -m, NVLink errors) or drain it.",
            )
            for h in low
        ]
    return out


def storage_findings(io: Sequence[IoRecord], min_gap: float = DEFAULT_MIN_GAP) -> list[Finding]:
    """Per-host storage bandwidth (`IoRecord.per_host_bw_GBps`) against the fleet of one
    record's hosts: one path, tool, writers or workers per node and block size (records
    measured differently are never pooled)."""
    out: list[Finding] = []
    for r in io:
        if r.failed:
            continue
        med, low = low_outliers(r.per_host_bw_GBps, min_gap)  # storage_rule.host_outliers: measured again
        what = f"{r.workload} {r.direction}"
        out += [
            Finding(
                component="node",
                check=f"per-host {what} {r.path}",
                status="below_spec",
                measured=r.per_host_bw_GBps[h],
                expected=med,
                unit="GB/s",
                hosts=(h,),
                extra={"path": r.path, "workload": r.workload, "basis": "fleet"},
                message=f"{h} runs {what} on {r.path} at {_fmt(r.per_host_bw_GBps[h])} GB/s against a fleet median "
                f"of {_fmt(med)} GB/s: check its mount options, storage NIC and local disks.",
            )
            for h in low
        ]
    return out


def localise(
    pairs: PairEvidence, frame: pd.DataFrame, io: Sequence[IoRecord], expected_pair_GBps: float | None = None
) -> list[Finding]:
    """`node` and `link` findings naming culprit hosts; [] when nothing stands out.
    `expected_pair_GBps` is the busbw a healthy pair should reach (None: judge by the fleet)."""
    return pair_findings(pairs, expected_pair_GBps) + intra_node_findings(frame) + storage_findings(io)
