"""Measured vs advertised (pure): each component against its catalog or spec figure.

Network: the sweep's plateau. For each (scope, op) the busbw at each size is the median
over every record of that size (all groups, both in-place and out-of-place); the plateau
is the best of those medians among the three largest sizes measured, and the finding
names that size. Large messages are where busbw saturates; taking the best of the top
three tolerates one noisy point without rewarding a single outlier group.

Inter-node rails are the exception: the rails of one run (one group per local rank) run at
the same moment and may share the node's NICs, so one rail can finish early and leave the
link to the others. What a job spanning every GPU gets per GPU is the node's aggregate —
all rails' bytes over the slowest rail's time — which, rails moving equal bytes, is the
slowest rail's busbw. So per run the minimum over rails is taken, then the median over runs.

Status: ok / below_spec (plateau < threshold x advertised) / no_reference (no figure given
or detected: never a guess) / suspect (above what the hardware can carry: > 1.05 x
advertised, or > 2.1 x for all_reduce / reduce_scatter on links with in-network reduction
(NVLink SHARP, InfiniBand SHARP), which send each byte once instead of ~twice).
"""

from __future__ import annotations

import bisect
import math
import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from reports.columns import hosts_in, net_columns
from reports.findings import Finding
from reports.judging.spec import Spec, StorageSpec
from reports.records import OPS, IoRecord, NetRecord
from reports.units import format_size

SUSPECT_FACTOR = 1.05
IN_NETWORK_FACTOR = 2.1
REDUCING_OPS = ("all_reduce", "reduce_scatter")
PLATEAU_SIZES = 3
# a storage record shorter than this is not a steady bandwidth (stoker's fio jobs run at
# least 2 s after their ramp; fio may report a hair under): shown, never judged
MIN_STEADY_S = 1.5
MAX_HOSTS_NAMED = (
    8  # a scope-wide finding over more hosts names none: reports.judging.localise names culprits
)


@dataclass(frozen=True, kw_only=True, slots=True)
class Curve:
    """busbw (GB/s) against message size (bytes) for one scope and op, sizes ascending."""

    scope: str
    op: str
    sizes: tuple[int, ...]
    busbw: tuple[float, ...]
    hosts: tuple[str, ...]
    backend: str

    def plateau(self) -> tuple[int, float]:
        """(size, busbw): the best per-size median among the largest sizes."""
        top = range(len(self.sizes) - 1, max(-1, len(self.sizes) - 1 - PLATEAU_SIZES), -1)
        best = max(top, key=lambda i: self.busbw[i])  # ties: the largest size
        return self.sizes[best], self.busbw[best]

    def at(self, size: float) -> tuple[float, str]:
        """busbw interpolated at `size` (linear in log size); outside the sweep the nearest
        end is used, and the note says so."""
        if size <= self.sizes[0]:
            note = (
                ""
                if size == self.sizes[0]
                else f"below the smallest size measured ({format_size(self.sizes[0])}): its busbw used"
            )
            return self.busbw[0], note
        if size >= self.sizes[-1]:
            note = (
                ""
                if size == self.sizes[-1]
                else f"above the largest size measured ({format_size(self.sizes[-1])}): its busbw used"
            )
            return self.busbw[-1], note
        i = bisect.bisect_left(self.sizes, size)
        if self.sizes[i] == size:
            return self.busbw[i], ""
        x0, x1 = math.log(self.sizes[i - 1]), math.log(self.sizes[i])
        w = (math.log(size) - x0) / (x1 - x0)
        return self.busbw[i - 1] + w * (self.busbw[i] - self.busbw[i - 1]), ""


def effective_scope(rec: NetRecord) -> str:
    """A `world` sweep is intra-node on one node and crosses nodes otherwise."""
    if rec.scope == "world":
        return "intra-node" if rec.nodes <= 1 else "inter-node"
    return rec.scope


def build_curves(net: Sequence[NetRecord]) -> tuple[dict[tuple[str, str], Curve], int]:
    """Curves per (scope, op), and how many records were left out because their
    correctness check failed (their bandwidth means nothing). Explicit intra-node /
    inter-node sweeps win over `world` sweeps of the same op. Grouped as columns
    (reports.columns): 10^5 records and more."""
    df = net_columns(net)
    if df.empty:
        return {}, 0
    wrong = int((df["wrong"] != 0).sum())
    # a lone rank crosses no link: its "bandwidth" is a local copy
    use = df[
        (df["wrong"] == 0) & (df["time_s"] > 0) & ~df["scope"].isin(("pair", "groups")) & (df["ranks"] >= 2)
    ]
    # object (Python str) columns: pandas' arrow-backed strings are slow to build row by row
    scope = use["scope"].astype(object).to_numpy()
    from_world = scope == "world"
    eff = np.where(from_world, np.where(use["nodes"].to_numpy() <= 1, "intra-node", "inter-node"), scope)
    use = use.assign(
        eff=eff.astype(object),
        from_world=from_world,
        op=use["op"].astype(object),
        backend=use["backend"].astype(object),
    )
    values: dict[tuple[str, str, bool], dict[int, list[float]]] = {}
    hosts: dict[tuple[str, str, bool], set[str]] = {}
    backends: dict[tuple[str, str, bool], str] = {}
    rails = use["eff"].eq("inter-node") & ~use["from_world"]
    # keys in the order the records first show them (the findings' order), rails after
    for (sc, op, w), part in use[~rails].groupby(["eff", "op", "from_world"], sort=False):
        key = (str(sc), str(op), bool(w))
        values[key] = {int(b): list(v) for b, v in part.groupby("bytes", sort=False)["busbw_GBps"]}
        hosts[key], backends[key] = hosts_in(part), str(part["backend"].iloc[-1])
    # explicit inter-node rails: per size, the slowest of the concurrent rails of each run
    for op, part in use[rails].groupby("op", sort=False):
        key = ("inter-node", str(op), False)
        per_run = part.groupby(["bytes", "run_id", "in_place"], sort=False, observed=True)["busbw_GBps"].min()
        values[key] = {int(b): list(v) for b, v in per_run.groupby(level="bytes", sort=False)}
        hosts[key], backends[key] = hosts_in(part), str(part["backend"].iloc[-1])
    curves: dict[tuple[str, str], Curve] = {}
    for (scope_, op, from_world_), by_size in sorted(values.items(), key=lambda kv: kv[0][2], reverse=True):
        # world-derived first, so an explicit sweep of the same (scope, op) replaces it
        sizes = sorted(by_size)
        curves[(scope_, op)] = Curve(
            scope=scope_,
            op=op,
            sizes=tuple(sizes),
            busbw=tuple(statistics.median(by_size[s]) for s in sizes),
            hosts=tuple(sorted(hosts[(scope_, op, from_world_)])),
            backend=backends[(scope_, op, from_world_)],
        )
    return curves, wrong


def main_op(curves: dict[tuple[str, str], Curve], scope: str, prefer: str = "all_reduce") -> Curve | None:
    if (scope, prefer) in curves:
        return curves[(scope, prefer)]
    return next((curves[(scope, op)] for op in OPS if (scope, op) in curves), None)


def status_of(measured: float, expected: float | None, threshold: float, limit: float) -> str:
    if expected is None:
        return "no_reference"
    if measured > limit * expected:
        return "suspect"
    return "below_spec" if measured < threshold * expected else "ok"


def _net_message(
    scope: str,
    c: Curve,
    size: int,
    bw: float,
    expected: float | None,
    desc: str,
    status: str,
    threshold: float,
) -> str:
    head = f"{scope} {c.op} busbw plateau {bw:.1f} GB/s at {format_size(size)}"
    if status == "no_reference":
        field = "network.intra_node" if scope == "intra-node" else "network.inter_node"
        return f"{head} has nothing to compare with: give {field} in --spec (a catalog link name or {{GBps: X}}) to judge it."
    assert expected is not None
    share = f"{bw / expected:.0%} of the advertised {expected:.4g} GB/s ({desc})"
    if status == "ok":
        return f"{head} is {share}, above the {threshold:.0%} threshold: no action needed."
    if status == "suspect":
        return (
            f"{head} is {share}, more than the link can carry: check the spec (link, count, gpus_per_node) "
            "and that the test really crossed the links it names."
        )
    fix = (
        "check NVLink/PCIe state (nvidia-smi topo -m, nvidia-smi nvlink -s) and NCCL_P2P settings"
        if scope == "intra-node"
        else "check NIC link rates (ibstat), GPUDirect RDMA and NCCL_IB_HCA, then run --scopes pairs to find the slow node or link"
    )
    return f"{head} is only {share}, under the {threshold:.0%} threshold: {fix}."


def compare_network(
    curves: dict[tuple[str, str], Curve], spec: Spec | None
) -> tuple[list[Finding], dict[str, float]]:
    """One finding per measured scope (intra-node, inter-node), all_reduce by default."""
    findings: list[Finding] = []
    expected_used: dict[str, float] = {}
    threshold = (spec.thresholds if spec else {}).get("network", 0.80)
    for scope, component in (("intra-node", "intra-node network"), ("inter-node", "inter-node network")):
        c = main_op(curves, scope)
        if c is None:
            continue
        if scope == "intra-node":
            expected = spec.intra_node_GBps if spec else None
            lk = spec.intra_node_link if spec else None
            desc = lk.name if lk else "spec"
        else:
            expected = spec.inter_node_per_gpu_GBps if spec else None
            lk = spec.inter_node_link if spec else None
            desc = f"{spec.inter_node_desc} over {spec.gpus_per_node} GPUs" if spec and expected else ""
        limit = (
            IN_NETWORK_FACTOR
            if (lk is not None and lk.in_network_reduction and c.op in REDUCING_OPS)
            else SUSPECT_FACTOR
        )
        size, bw = c.plateau()
        status = status_of(bw, expected, threshold, limit)
        if expected is not None:
            expected_used[component] = expected
        findings.append(
            Finding(
                component=component,
                check=f"{c.op} busbw plateau",
                status=status,
                measured=round(bw, 3),
                expected=expected,
                unit="GB/s",
                hosts=c.hosts if status != "ok" and len(c.hosts) <= MAX_HOSTS_NAMED else (),
                message=_net_message(scope, c, size, bw, expected, desc, status, threshold),
                extra={
                    "size_bytes": size,
                    "op": c.op,
                    "scope": scope,
                    "backend": c.backend,
                    "share": round(bw / expected, 4) if expected else None,
                },
            )
        )
    return findings, expected_used


def match_storage(path: str, entries: Sequence[StorageSpec]) -> StorageSpec | None:
    """The spec entry for a measured path: the longest spec path that is it or contains it."""
    best: StorageSpec | None = None
    for e in entries:
        root = e.path.rstrip("/") or "/"
        if path == root or path.startswith(root if root == "/" else root + "/"):
            if best is None or len(root) > len(best.path.rstrip("/")):
                best = e
    return best


def _advertised(entry: StorageSpec | None, direction: str) -> float | None:
    if entry is None:
        return None
    return entry.write_GBps if direction == "write" else entry.read_GBps


def why_not_compared(r: IoRecord) -> str:
    """Why a storage record may not stand for the disk against its advertised figure ("" when
    it may): only IO that bypassed the page cache (O_DIRECT, or buffered over a data set
    larger than the host's memory) and ran long enough to be steady."""
    if r.backend.startswith("torch"):
        return "the framework's save path, through the page cache"
    if r.direct is not True:
        data, ram = r.extra.get("data_bytes") or 0, r.extra.get("ram_bytes") or 0
        if not (r.direct is False and data > ram > 0):
            return (
                "buffered IO that the page cache can hold" if r.direct is False else "direct IO not recorded"
            )
    if 0 < r.runtime_s < MIN_STEADY_S:
        return f"ran {r.runtime_s:.2g} s, too short to be a steady bandwidth (at least {MIN_STEADY_S:g} s)"
    return ""


def _beside(recs: Sequence[IoRecord]) -> str:
    return "; ".join(
        f"{r.backend}{' buffered' if r.direct is False and not r.backend.startswith('torch') else ''} "
        f"{r.bw_GBps:.2f} GB/s ({why_not_compared(r)})"
        for r in recs
    )


def spec_advice(path: str, kind: str) -> str:
    """What to add to the spec for `path`. `stoker run`'s throwaway scratch dir (.io-scratch-XXXX,
    removed after the run) is no path to put in a spec (issue 21): name the dir that holds it."""
    parent, _, leaf = path.rstrip("/").rpartition("/")
    if leaf.startswith((".io-scratch-", "io-scratch")):
        where = parent or "/"
        return (
            f"this is stoker run's throwaway scratch dir on the file system of {where}: add {{path: {where}, "
            f"kind: {kind}, read_GBps: X, write_GBps: Y}} to storage in --spec, or measure the storage you mean "
            "with stoker run --path DIR."
        )
    return f"add {{path: {path}, kind: {kind}, read_GBps: X, write_GBps: Y}} to storage in --spec."


def compare_storage(io: Sequence[IoRecord], spec: Spec | None) -> tuple[list[Finding], dict[str, float]]:
    """One finding per (path, workload, direction). Only records that bypassed the page cache
    and ran long enough are compared with the advertised figure (why_not_compared); the others
    (torch.save/dcp, buffered, too short) are named beside, never judged. Among the compared
    ones the best run counts (a slower repeat is noise, not the hardware's figure). Shared
    storage compares the aggregate of all nodes with the file system's figure; local storage
    compares the median node with the per-node figure and names the nodes under the threshold."""
    groups: dict[tuple[str, str, str], list[IoRecord]] = defaultdict(list)
    for r in io:
        if not r.failed and r.workload != "metadata" and r.direction in ("read", "write"):
            groups[(r.path, r.workload, r.direction)].append(r)
    findings: list[Finding] = []
    expected_used: dict[str, float] = {}
    threshold = (spec.thresholds if spec else {}).get("storage", 0.80)
    for (path, workload, direction), all_recs in sorted(groups.items()):
        entry = match_storage(path, spec.storage) if spec else None
        kind = entry.kind if entry else all_recs[0].scope
        component = "local storage" if kind == "local" else "shared storage"
        recs = [r for r in all_recs if not why_not_compared(r)]
        aside = [r for r in all_recs if why_not_compared(r)]
        beside = f" Beside it, not compared: {_beside(aside)}." if aside else ""
        if not recs:
            findings.append(
                Finding(
                    component=component,
                    check=f"{workload} {direction} bandwidth",
                    status="no_reference",
                    measured=round(max(r.bw_GBps for r in aside), 3),
                    expected=_advertised(entry, direction),
                    unit="GB/s",
                    hosts=(),
                    message=(
                        f"{workload} on {path}: no measurement that bypassed the page cache and ran long "
                        f"enough ({_beside(aside)}): rerun stoker io (fio, direct IO) before judging it."
                    ),
                    extra={
                        "path": path,
                        "workload": workload,
                        "direction": direction,
                        "backend": aside[0].backend,
                    },
                )
            )
            continue
        best = max(recs, key=lambda r: r.bw_GBps)
        low: tuple[str, ...] = ()
        expected = _advertised(entry, direction)
        if kind == "local" and best.per_host_bw_GBps:
            measured = statistics.median(best.per_host_bw_GBps.values())
            if expected is not None:
                low = tuple(sorted(h for h, v in best.per_host_bw_GBps.items() if v < threshold * expected))
            what = f"median node {direction}"
        else:
            measured = best.bw_GBps
            what = f"aggregate {direction} over {best.nodes} node(s)"
        suspect_cache = best.cache_suspect
        status = status_of(measured, expected, threshold, SUSPECT_FACTOR)
        if suspect_cache and status != "no_reference":
            status = "suspect"
        head = f"{workload} on {path}: {what} {measured:.2f} GB/s"
        if status == "no_reference":
            msg = f"{head} has nothing to compare with: {spec_advice(path, kind)}"
        elif status == "suspect":
            why = (
                "the page cache answered (direct IO off or files too small)"
                if suspect_cache
                else "more than advertised"
            )
            msg = f"{head} looks wrong ({why}): rerun with files larger than RAM and direct IO before trusting it."
        elif status == "ok":
            assert expected is not None
            msg = f"{head} is {measured / expected:.0%} of the advertised {expected:.4g} GB/s: no action needed."
        else:
            assert expected is not None
            msg = (
                f"{head} is only {measured / expected:.0%} of the advertised {expected:.4g} GB/s, under the "
                f"{threshold:.0%} threshold: check the mount options, striping and the storage network, or correct the spec."
            )
        if expected is not None:
            expected_used[f"{component} {path} {direction}"] = expected
        findings.append(
            Finding(
                component=component,
                check=f"{workload} {direction} bandwidth",
                status=status,
                measured=round(measured, 3),
                expected=expected,
                unit="GB/s",
                hosts=low if low else (best.hosts if status in ("below_spec", "suspect") else ()),
                message=msg + beside,
                extra={"path": path, "workload": workload, "direction": direction, "backend": best.backend},
            )
        )
    return findings, expected_used
