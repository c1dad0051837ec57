"""Measured vs advertised (pure): each component against its catalog or spec figure.

Network: the plateau of the judged curve (reports.evidence.sweeps: medians per size, the
slowest rail per run, explicit scopes over world), and the finding names its size. Inter-node
is judged per rail against one NIC's share (the spec's `inter_node` total over the GPUs, one
rail each): an `inter-node` sweep as measured (each rail's busbw), a world sweep spanning k
nodes of n ranks converted to each NIC's wire rate first, which `judged` says: per algorithm NCCL
may have run (reports.judging.network.wire), the reading that holds the promise lowest judges.

Status: ok / below_spec (plateau < threshold x advertised) / no_reference (no figure given
or detected: never a guess) / suspect (above what the hardware can carry: > 1.05 x
advertised, or > 2.1 x for all_reduce / reduce_scatter on links with in-network reduction
(NVLink SHARP, InfiniBand SHARP), which send each byte once instead of ~twice).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from reports.evidence.sweeps import Sweep, main_op
from reports.judging.network import reference
from reports.judging.network.wire import Wire, wire_rate
from reports.shared.findings import Component, Finding, Status
from reports.shared.records import IoRecord
from reports.shared.spec import Spec, StorageSpec, match_storage, thresholds_of
from reports.shared.storage_rule import spec_advice, why_not_compared
from reports.shared.units import format_size

SUSPECT_FACTOR = 1.05
IN_NETWORK_FACTOR = 2.1
REDUCING_OPS = ("all_reduce", "reduce_scatter")
PLATEAU_SIZES = 3
MAX_HOSTS_NAMED = (
    8  # a scope-wide finding over more hosts names none: reports.judging.network.localise names culprits
)


LATENCY_BYTES = 1 << 20  # under 1 MiB latency, not any GPU link's bandwidth, sets the time


def latency_bound(c: Sweep) -> bool:
    """The sweep stopped under LATENCY_BYTES, where latency sets the time: its busbw says
    nothing of the link (a table pasted up to 256 bytes). A sweep past it is judged whatever
    its times: a slow link's figure is slow at every size."""
    return bool(c.sizes) and c.sizes[-1] < LATENCY_BYTES


def status_of(
    measured: float, expected: float | None, threshold: float, limit: float, *, least: float | None = None
) -> Status:
    """`least`: the lowest reading of the same figure (a world busbw's wire rate under the algorithm
    that needs the least NIC traffic, reports.judging.network.wire): suspect only when even it is too high."""
    if expected is None:
        return "no_reference"
    if (measured if least is None else least) > limit * expected:
        return "suspect"
    return "below_spec" if measured < threshold * expected else "ok"


def _net_message(
    scope: str,
    c: Sweep,
    size: int,
    bw: float,
    expected: float | None,
    desc: str,
    status: str,
    threshold: float,
    what: str = "busbw plateau",
) -> str:
    head = f"{scope} {c.op} {what} {bw:.1f} GB/s at {format_size(size)}"
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


def _inter_node_rate(c: Sweep, bw: float, env: Mapping[str, str]) -> tuple[str, float, str, Wire | None]:
    """(what was judged: "" for an inter-node sweep's rails as measured; the figure compared
    with one NIC; a sentence saying how it was had; the per-algorithm reading, reports.judging.network.wire)."""
    k, n = c.nodes, c.ranks
    if not c.from_world or n <= k or k < 2:
        return "", bw, "", None  # each rail's busbw as measured
    w = wire_rate(c.op, bw, n, k, env)
    if w is None:
        return (
            "world busbw",
            bw,
            (
                f"A world {c.op} over {n} ranks on {k} nodes has no per-NIC conversion: its busbw is judged as recorded. "
            ),
            None,
        )
    as_ring = "" if w.algo == "ring" else f"; as a ring {bw * k / n:.2f}"
    return (
        "world busbw as NIC wire rate",
        w.rate,
        (
            f"World {c.op} busbw {bw:.1f} GB/s over {n} ranks on {k} nodes is {w.rate:.2f} GB/s on each NIC's wire "
            f"read as {w.algo} ({w.why}{as_ring}). "
        ),
        w,
    )


def compare_network(
    curves: dict[tuple[str, str], Sweep],
    spec: Spec | None,
    *,
    written: frozenset[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> tuple[list[Finding], dict[str, float]]:
    """One finding per measured scope (intra-node, inter-node), all_reduce by default. `written`
    names the scopes whose figure the user's spec gave (None: every figure `spec` holds); a scope
    whose link is only detected is judged against what healthy systems reach on it
    (reports.judging.network.reference), with the advertised figure beside it. `env`: the run's
    NCCL_ALGO / NCCL_NVLS_ENABLE, which tell the ring's figures from NVLS's."""
    findings: list[Finding] = []
    expected_used: dict[str, float] = {}
    threshold = thresholds_of(spec).network
    scopes: tuple[tuple[str, Component], ...] = (
        ("intra-node", "intra-node network"),
        ("inter-node", "inter-node network"),
    )
    for scope, component in scopes:
        c = main_op(curves, scope)
        if c is None:
            continue
        if scope == "intra-node":
            advertised, lk, desc = spec.intra_node_for(c.ranks_per_node) if spec else (None, None, "spec")
        else:
            advertised = spec.inter_node_per_gpu_GBps if spec else None
            lk = spec.inter_node_link if spec else None
            desc = f"{spec.inter_node_desc} over {spec.gpus_per_node} GPUs" if spec and advertised else ""
            if spec and advertised is None and spec.inter_node_GBps:  # no gpus_per_node: the ranks
                advertised = spec.inter_node_GBps / c.ranks_per_node  # the sweep ran per node share it
                desc = (
                    f"{spec.inter_node_desc or f'{spec.inter_node_GBps:g} GB/s'} per node over the sweep's "
                    f"{c.ranks_per_node} rank{'s' if c.ranks_per_node != 1 else ''} per node (no gpus_per_node in the spec)"
                )
        limit = (
            IN_NETWORK_FACTOR
            if (lk is not None and lk.in_network_reduction and c.op in REDUCING_OPS)
            else SUSPECT_FACTOR
        )
        size, bw = c.plateau()
        judged, bw, head, w = (
            _inter_node_rate(c, bw, env or {}) if scope == "inter-node" else ("", bw, "", None)
        )
        what = "wire rate per NIC" if judged.endswith("wire rate") else "busbw plateau"
        nics = spec.inter_node_count if spec and lk else None
        h = reference.healthy(
            scope, c, bw, lk, nics=nics, gpus_per_node=spec.gpus_per_node if spec else None, env=env or {}
        )
        from_spec = advertised is not None and (written is None or scope in written)
        expected = advertised
        if from_spec or h is None:
            basis = "advertised" if advertised is not None else None
            least = w.least if w else None
            status = status_of(bw, advertised, threshold, limit, least=least)
            message = head + _net_message(scope, c, size, bw, advertised, desc, status, threshold, what)
            if status == "below_spec" and h is not None and advertised and bw >= h.figure:
                status = "ok"
                line = f"{scope} {c.op} {what} {bw:.1f} GB/s at {format_size(size)}"
                message = head + reference.explained(line, bw, h, advertised, desc, threshold)
            elif h is not None and status == "ok":
                message = message.replace(
                    ": no action needed.", f" ({reference.reach(h)}): no action needed."
                )
        else:  # only detected: what healthy systems reach judges it
            basis = "reference"
            expected = h.figure
            if advertised is not None and (w.least if w else bw) > limit * advertised:
                status = "suspect"
                message = head + _net_message(
                    scope, c, size, bw, advertised, desc, "suspect", threshold, what
                )
            else:
                status = reference.status(bw, h, max(c.sizes))
                message = head + reference.message(scope, c, size, bw, h, status, advertised)
        if status == "below_spec" and latency_bound(c):
            status, basis = "no_reference", None  # latency, not the link, sets such a figure
            message = (
                f"{scope} {c.op} busbw {bw:.2f} GB/s at {format_size(size)} not judged: the sweep stopped at "
                f"{format_size(max(c.sizes))}, where latency, not bandwidth, sets the figure; sweep to 1 GiB or more "
                "(nccl-tests -e 1G)."
            )
        if advertised is not None:
            expected_used[component] = advertised  # the charts' advertised line
        findings.append(
            Finding(
                component=component,
                check=f"{c.op} busbw plateau",
                status=status,
                measured=round(bw, 3),
                expected=expected,
                unit="GB/s",
                hosts=c.hosts if status != "ok" and len(c.hosts) <= MAX_HOSTS_NAMED else (),
                message=message,
                extra={
                    **({"judged": judged} if judged else {}),
                    **({"wire": {"algo": w.algo, "algos": list(w.algos), "from": w.why}} if w else {}),
                    "size_bytes": size,
                    "op": c.op,
                    "scope": scope,
                    "backend": c.backend,
                    "share": round(bw / expected, 4) if expected else None,
                    "basis": basis,
                    "advertised": advertised,
                    "reference": h.extra() if h is not None else None,
                    **judged_against(expected, basis, threshold),
                },
            )
        )
    return findings, expected_used


def judged_against(promise: float | None, basis: str | None, threshold: float) -> dict[str, Any]:
    """What a figure was judged against, for verdict.json (docs/contract.md): the promise (the
    spec's or catalog's advertised figure, or what healthy systems reach) and the share of it the
    figure had to reach; nothing where no figure judged it."""
    if promise is None or basis is None:
        return {}
    share = reference.REFERENCE_SHARE if basis == "reference" else threshold
    return {"promise": {"GBps": promise, "basis": basis}, "threshold": share}


def _advertised(entry: StorageSpec | None, direction: str) -> float | None:
    if entry is None:
        return None
    return entry.write_GBps if direction == "write" else entry.read_GBps


def _beside(recs: Sequence[IoRecord]) -> str:
    return "; ".join(
        f"{r.backend}{' buffered' if r.direct is False and not r.backend.startswith('torch') else ''} "
        f"{r.bw_GBps:.2f} GB/s ({why_not_compared(r)})"
        for r in recs
    )


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
    threshold = thresholds_of(spec).storage
    for (path, workload, direction), all_recs in sorted(groups.items()):
        entry = match_storage(path, spec.storage) if spec else None
        kind = entry.kind if entry else all_recs[0].scope
        component: Component = "local storage" if kind == "local" else "shared storage"
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
                extra={
                    "path": path,
                    "workload": workload,
                    "direction": direction,
                    "backend": best.backend,
                    **judged_against(expected, "advertised" if expected is not None else None, threshold),
                },
            )
        )
    return findings, expected_used
