"""Causes, named from NCCL's own words (pure): the `nccl_debug` facts an imported log's
manifest carries (reports/ingest/nccl_debug.py) and the correctness columns of the sweeps,
turned into what an expert says first: which component, which cause, and the line that
shows it.

Two kinds of finding come from here:

- **incorrect** (fails): a table with `#wrong` > 0, nccl-tests' `Out of bounds values : N
  FAILED`, or an `NCCL WARN` error. Wrong answers are judged before any bandwidth.
- **misconfigured** (fails): what NCCL says it did contradicts what the spec promises — a run
  over sockets on a cluster whose spec names InfiniBand or EFA, P2P switched off by setting —
  or what the node's inventory says it has: sockets on a node with active RDMA ports, no GPU
  Direct RDMA where the inventory says it is possible.

Every other cause (`CAUSES`) explains a failing figure of its component: the finding keeps
its status and gains `cause`, `cause_line` and the meaning and the usual fix in its message.
The table is docs/diagnosis.md's; each entry's `evidence` reads the facts and returns the
line that shows it, or None.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reports.evidence.sweeps import Sweep
from reports.shared.findings import FAILING, Component, Finding
from reports.shared.port_rule import gpu_affine_nics, port_role
from reports.shared.spec import Spec

Facts = Mapping[str, Any]  # a manifest's `nccl_debug` object
Line = Mapping[str, Any]  # {"line": N, "text": "..."}

# inter-node links that are RDMA by definition: a run over sockets on them is a fallback
_RDMA_PREFIXES = ("ib-", "efa-")
# WARN lines that say nothing went wrong with the run's data or transport (plugin lookups that
# fall back, deprecations): not errors
_BENIGN_WARN = ("NET/Plugin", "deprecated", "Ignoring", "NCCL_IB_GID_INDEX")
# WARN lines of an RDMA transport that would not load or open (NCCL then runs over sockets):
# evidence of socket_fallback, never an error of the run. An RDMA error once running ("NET/IB :
# Got completion with error") is an error.
_RDMA_OPEN_WARN = (
    "Failed to open libibverbs",
    "ibv_open_device",
    "ibv_get_device_list",
    "Unable to open device",
    "NET/IB : No device",
    "NET/OFI Unable",
    "libfabric",
    "Libfabric",
    "No plugin found",
)


def _rdma_open_warn(w: Line) -> bool:
    return any(k in w["text"] for k in _RDMA_OPEN_WARN)


def _fallback_warn(f: Facts) -> Line | None:
    """A WARN that an RDMA transport would not open: the run fell back to sockets."""
    return next((w for w in f.get("warns") or () if _rdma_open_warn(w)), None)


def _net_name(f: Facts) -> str:
    return str((f.get("network") or {}).get("name", ""))


def _socket(f: Facts) -> Line | None:
    if "socket" in _net_name(f).lower():
        return f["network"]
    via = f.get("first_via") or {}
    return via.get("NET/Socket")


def _gdr_off(f: Facts) -> Line | None:
    via = f.get("first_via") or {}
    if (gdr := f.get("gdr") or {}).get("Disabled"):
        return gdr["Disabled"]
    plain = [t for t in via if t.startswith("NET/") and t != "NET/Socket" and not t.endswith("/GDRDMA")]
    if plain and not any(t.endswith("/GDRDMA") for t in via):
        return via[plain[0]]
    return None


def _p2p_off(f: Facts) -> Line | None:
    env = f.get("env") or {}
    if (p := env.get("NCCL_P2P_DISABLE")) and str(p.get("value")) not in ("0", ""):
        return p
    if (p := env.get("NCCL_P2P_LEVEL")) and str(p.get("value")).upper() in ("LOC", "0"):
        return p
    for w in f.get("warns") or ():
        if "peer access" in w["text"].lower():
            return w
    return None


def _shm(f: Facts) -> Line | None:
    via = f.get("first_via") or {}
    if "SHM" in via and not any(t.startswith("P2P/") for t in via):
        return via["SHM"]
    return None


def _nvls_off(f: Facts) -> Line | None:
    n = f.get("nvls")
    return n if n and not n.get("available") else None


def _ib_disabled(f: Facts) -> Line | None:
    env = f.get("env") or {}
    p = env.get("NCCL_IB_DISABLE")
    return p if p and str(p.get("value")) not in ("0", "") else None


def _no_plugin(f: Facts) -> Line | None:
    return f.get("no_ib_device") or f.get("plugin_missing") if _socket(f) else None


@dataclass(frozen=True, kw_only=True, slots=True)
class Cause:
    """One known cause: the component it slows, what shows it, what it means, what people did."""

    name: str
    component: Component
    evidence: Callable[[Facts], Line | None]
    means: str
    fix: str


# Most specific first: a finding takes the first cause whose evidence is in its log.
CAUSES: tuple[Cause, ...] = (
    Cause(
        name="socket_fallback",
        component="inter-node network",
        evidence=_socket,
        means="NCCL fell back to TCP sockets: no RDMA transport (no IB/EFA network plugin, no RDMA device "
        "in the container, a wrong NCCL_IB_HCA, or NCCL_IB_DISABLE set)",
        fix="give the job the RDMA devices (/dev/infiniband, the EFA device) and the network plugin "
        "(aws-ofi-nccl on EFA), check NCCL_IB_HCA / NCCL_NET, and run again with NCCL_DEBUG=INFO until it "
        "says 'Using network IB' (or 'AWS Libfabric')",
    ),
    Cause(
        name="gdr_off",
        component="inter-node network",
        evidence=_gdr_off,
        means="GPU Direct RDMA is not used: the NIC reads and writes host memory and every byte crosses "
        "the CPU's PCIe root (nvidia-peermem not loaded, no dma-buf, or NCCL_NET_GDR_LEVEL)",
        fix="load nvidia-peermem (or use a driver and kernel with dma-buf), check the GPU and NIC share a "
        "PCIe switch (nvidia-smi topo -m), and look for /GDRDMA on the NET channels of NCCL_DEBUG=INFO",
    ),
    Cause(
        name="p2p_disabled",
        component="intra-node network",
        evidence=_p2p_off,
        means="peer-to-peer between GPUs is switched off (NCCL_P2P_DISABLE / NCCL_P2P_LEVEL) or not "
        "supported (ACS or the IOMMU on PCIe switches, a VM without P2P)",
        fix="unset NCCL_P2P_DISABLE; on bare metal disable ACS on the PCIe switches and set the IOMMU to "
        "passthrough; check with nvidia-smi topo -p2p r and nccl-tests again",
    ),
    Cause(
        name="shm_transport",
        component="intra-node network",
        evidence=_shm,
        means="GPUs of one node talk through host shared memory (via SHM), not P2P/NVLink: P2P is "
        "unavailable between them (ACS, IOMMU, virtualisation, or no NVLink between those GPUs)",
        fix="check nvidia-smi topo -m and topo -p2p r; disable ACS / set the IOMMU to passthrough, or "
        "give the VM P2P; NCCL_DEBUG=INFO should then show 'via P2P/IPC' or 'via P2P/CUMEM'",
    ),
    Cause(
        name="nvls_off",
        component="intra-node network",
        evidence=_nvls_off,
        means="NVLink SHARP (NVLS) is not available, so all_reduce runs as a ring, not in the switch "
        "(nvidia-fabricmanager or the IMEX/multicast support missing)",
        fix="check nvidia-fabricmanager is running and the driver supports multicast (CUDA 12.1+); the "
        "ring figure is the one to expect until then",
    ),
)
_BY_NAME = {c.name: c for c in CAUSES}


def _facts(manifests: Sequence[Mapping[str, Any]]) -> list[tuple[str, Facts]]:
    return [
        (str(m.get("source", "")), m["nccl_debug"])
        for m in manifests
        if isinstance(m.get("nccl_debug"), Mapping)
    ]


def _quote(source: str, line: Line) -> str:
    """FILE:LINE: the line (the file the line names itself, else the log it was read from)."""
    where = line.get("file") or source
    return (
        f"{where}:{line['line']}: {line['text'].strip()}"
        if where
        else f"line {line['line']}: {line['text'].strip()}"
    )


def _scope_component(sweep: Sweep) -> Component:
    scope = sweep.scope
    if scope == "world":
        scope = "inter-node" if sweep.nodes > 1 else "intra-node"
    return "inter-node network" if scope in ("inter-node", "pair", "groups") else "intra-node network"


def correctness_findings(sweeps: Sequence[Sweep], manifests: Sequence[Mapping[str, Any]]) -> list[Finding]:
    """A failing finding per sweep with wrong elements (#wrong > 0: the op, the sizes, how
    many), and per log whose nccl-tests said `Out of bounds values : N FAILED` or whose NCCL
    printed a WARN error: data the collective got wrong, or a run NCCL said went wrong."""
    out: list[Finding] = []
    for s in sweeps:
        bad = [(size, w) for size, w in zip(s.sizes, s.wrong, strict=False) if w]
        if not bad:
            continue
        first, worst = bad[0][0], max(w for _, w in bad)
        out.append(
            Finding(
                component=_scope_component(s),
                check=f"{s.op} correctness",
                status="incorrect",
                measured=float(sum(w for _, w in bad)),
                expected=0.0,
                unit="records with #wrong > 0",
                hosts=s.hosts,
                message=(
                    f"{s.op} ({s.label}) returned wrong data at {len(bad)} of {len(s.sizes)} sizes, from "
                    f"{first:,} bytes (up to {worst} record(s) wrong at one size): the collective corrupts data "
                    "— check GPU memory errors (nvidia-smi -q -d ECC, Xid in dmesg), NVLink/PCIe errors and "
                    "the NCCL version before trusting any bandwidth of it."
                ),
                extra={"sizes_wrong": [size for size, _ in bad], "cause": "data_corruption"},
            )
        )
    for source, f in _facts(manifests):
        oob = f.get("out_of_bounds") or []
        errors = [
            *(f.get("test_failures") or ()),
            *(
                w
                for w in f.get("warns") or ()
                if not any(b in w["text"] for b in _BENIGN_WARN) and not _rdma_open_warn(w)
            ),
        ]
        if not oob and not errors:
            continue
        line = oob[0] if oob else errors[0]
        what = (
            f"nccl-tests found {sum(o.get('count', 0) for o in oob)} out-of-bounds value(s)"
            if oob
            else f"{len(errors)} error line(s) (nccl-tests' failures, NCCL WARNs)"
        )
        out.append(
            Finding(
                component="inter-node network" if _multi_node(f) or _rdma_net(f) else "intra-node network",
                check="nccl correctness",
                status="incorrect",
                measured=None,
                expected=None,
                unit="",
                hosts=(),
                message=f'{what} in {source or "the log"}: "{line["text"].strip()[:200]}" — the run failed '
                "or returned wrong data; fix that before judging its bandwidth.",
                extra={
                    "cause": "nccl_error" if not oob else "data_corruption",
                    "cause_line": _quote(source, line),
                },
            )
        )
    return out


def _rdma_promised(spec: Spec | None) -> str | None:
    link = spec.inter_node_link.name if spec and spec.inter_node_link else ""
    return link if link.startswith(_RDMA_PREFIXES) or "roce" in link else None


def _rdma_net(f: Facts) -> bool:
    """NCCL's network is an RDMA one (IB, RoCE, EFA/OFI), by its choice or its devices."""
    name = _net_name(f).lower()
    devs = f.get("net_devices") or {}
    return any(k in name for k in ("ib", "libfabric", "ofi")) or devs.get("net") in ("IB", "OFI")


def _multi_node(f: Facts) -> bool:
    return (f.get("nnodes") or len(f.get("hosts") or ())) > 1 or any(
        t.startswith("NET/") for t in f.get("first_via") or {}
    )


def _misconfigured(
    cause_name: str, f: Facts, source: str, line: Line, head: str, also: Line | None = None
) -> Finding:
    """One `misconfigured` finding: the cause's component, NCCL's line quoted (and a second
    line that says why), what it means and what people did."""
    cause = _BY_NAME[cause_name]
    said = f'{head}: "{line["text"].strip()[:160]}"' + (
        f' (and: "{also["text"].strip()[:160]}")' if also else ""
    )
    return Finding(
        component=cause.component,
        check=f"{'inter' if cause.component == 'inter-node network' else 'intra'}-node transport",
        status="misconfigured",
        measured=None,
        expected=None,
        unit="",
        hosts=tuple(f.get("hosts") or ()),
        message=f"{said} — {cause.means}; {cause.fix}.",
        extra={"cause": cause.name, "cause_line": _quote(source, line)},
    )


@dataclass(frozen=True, kw_only=True, slots=True)
class NodeCan:
    """What a node's inventory says NCCL could have used there."""

    rdma_ports: tuple[str, ...]  # its active compute RDMA ports ("mlx5_0 port 1")
    gdr: str | None  # how GPU Direct RDMA is possible ("nvidia_peermem", "dma-buf"), else None


def node_can(host_records: Sequence[Mapping[str, Any]]) -> dict[str, NodeCan]:
    """Per host of the inventory (`kind: "host"` records): its active compute RDMA ports, and
    whether GDR is possible there — a peer-memory module or dma-buf, and a GPU with a NIC behind
    its PCIe switch (NCCL's default NCCL_NET_GDR_LEVEL takes GDR only that close)."""
    by_host: dict[str, list[dict[str, Any]]] = {}
    for r in host_records:
        by_host.setdefault(str(r.get("host")), []).append(dict(r))
    out = {}
    for host, recs in by_host.items():
        affine = gpu_affine_nics(recs)
        ports = tuple(
            f"{p['device']} port {p['port']}"
            for p in recs
            if p.get("component") == "network port"
            and p.get("port")
            and p.get("state") == "ACTIVE"
            and port_role(p, affine) == "compute"
        )
        gdr = next((r.get("gdr") for r in recs if r.get("component") == "node"), None)
        possible = gdr if gdr not in (None, "none") and affine else None
        out[host] = NodeCan(rdma_ports=ports, gdr=possible)
    return out


def _against_inventory(
    source: str, f: Facts, can: Mapping[str, NodeCan], nodes: int, said: set[str]
) -> list[Finding]:
    """Sockets on a node whose inventory shows active RDMA ports, and no GPU Direct RDMA on a
    node whose inventory says it is possible: what NCCL did against the hardware it had."""
    here = [(h, can[h]) for h in sorted(f.get("hosts") or ()) if h in can]
    out = []
    rdma = [(h, c) for h, c in here if c.rdma_ports]
    if (
        "socket_fallback" not in said
        and rdma
        and (nodes > 1 or _multi_node(f) or _fallback_warn(f))
        and (line := _socket(f))
    ):
        h, c = rdma[0]
        head = f"NCCL ran over sockets on {h}, whose inventory shows active RDMA ports ({', '.join(c.rdma_ports)})"
        out.append(
            _misconfigured(
                "socket_fallback",
                f,
                source,
                line,
                head,
                _fallback_warn(f) or _no_plugin(f) or _ib_disabled(f),
            )
        )
    gdr = [(h, c) for h, c in here if c.gdr]
    if "gdr_off" not in said and gdr and _rdma_net(f) and (line := _gdr_off(f)):
        h, c = gdr[0]
        head = (
            f"NCCL did not use GPU Direct RDMA on {h}, whose inventory says it is possible "
            f"({c.gdr}, a NIC behind the GPUs' PCIe switches)"
        )
        out.append(_misconfigured("gdr_off", f, source, line, head))
    return out


def misconfigured_findings(
    manifests: Sequence[Mapping[str, Any]],
    spec: Spec | None,
    nodes: int = 0,
    host_records: Sequence[Mapping[str, Any]] = (),
) -> list[Finding]:
    """What NCCL did against what the spec (or its own hardware) promises: sockets on an RDMA
    fabric (InfiniBand, EFA, RoCE in the spec, an RDMA device that would not open, or a node
    whose inventory shows active RDMA ports), GPU Direct RDMA disabled on RDMA NICs or not used
    where the inventory says it is possible, P2P switched off by a setting: each fails whatever
    the figure. `nodes`: the most nodes a record spanned (one rank's NCCL file names its host
    alone); `host_records`: the inventory (DIR/host.jsonl)."""
    out: list[Finding] = []
    can = node_can(host_records)
    for source, f in _facts(manifests):
        link = _rdma_promised(spec)
        failed = _fallback_warn(f)  # an RDMA device was there and would not open
        said: set[str] = set()
        if ((link and (nodes > 1 or _multi_node(f))) or (failed and _socket(f))) and (
            line := _socket(f) or failed
        ):
            why = failed or _no_plugin(f) or _ib_disabled(f)
            head = f"NCCL ran over sockets, not {link or 'the RDMA device it tried'}"
            out.append(_misconfigured("socket_fallback", f, source, line, head, why))
            said.add("socket_fallback")
        if (line := (f.get("gdr") or {}).get("Disabled")) and (_rdma_net(f) or "HCA" in line["text"]):
            out.append(
                _misconfigured(
                    "gdr_off", f, source, line, "NCCL says GPU Direct RDMA is off on its RDMA NICs"
                )
            )
            said.add("gdr_off")
        out += _against_inventory(source, f, can, nodes, said)
        if (line := _p2p_off(f)) and "set by environment" in line["text"]:
            out.append(
                _misconfigured("p2p_disabled", f, source, line, "P2P between the GPUs was switched off")
            )
    return out


def explain(findings: Sequence[Finding], manifests: Sequence[Mapping[str, Any]]) -> list[Finding]:
    """Each failing network figure with the first known cause its log shows (CAUSES order):
    the status stays, the message says the cause and quotes NCCL's line."""
    facts = _facts(manifests)
    if not facts:
        return list(findings)
    out = []
    for fd in findings:
        if (
            fd.status not in FAILING
            or fd.component not in ("inter-node network", "intra-node network")
            or "cause" in fd.extra
        ):
            out.append(fd)
            continue
        found = next(
            (
                (c, src, ln)
                for c in CAUSES
                if c.component == fd.component
                for src, f in facts
                if (ln := c.evidence(f))
            ),
            None,
        )
        if found is None:
            out.append(fd)
            continue
        c, src, ln = found
        msg = f'{fd.message.rstrip(".")}; cause: {c.means} (NCCL: "{ln["text"].strip()[:160]}"); {c.fix}.'
        out.append(
            dataclasses.replace(
                fd, message=msg, extra={**fd.extra, "cause": c.name, "cause_line": _quote(src, ln)}
            )
        )
    return out


# A healthy busbw curve rises with the message size and levels off; a fall to under half of
# an earlier figure that lasts to the largest size is a path that breaks down under load (a
# congested or oversubscribed uplink across racks, a flapping port, PFC storms), not a plateau.
COLLAPSE_SHARE = 0.5
_COLLAPSE_FROM = 1 << 20  # below 1 MiB latency sets the figure: no collapse is read there


def collapse_findings(curves: Mapping[tuple[str, str], Sweep]) -> list[Finding]:
    """A failing finding per judged curve whose busbw falls, from some size of 1 MiB or more,
    to under COLLAPSE_SHARE of the best figure before it and stays there to the largest size.
    Not a gloo sweep inside one node: its ranks exchange through the host's loopback and memory,
    no path of a fabric that could break down (on a busy CPU its figures swing by half)."""
    out: list[Finding] = []
    for s in curves.values():
        if s.backend == "gloo" and s.nodes <= 1:
            continue
        pts = [(z, b) for z, b in zip(s.sizes, s.busbw, strict=False) if z >= _COLLAPSE_FROM and b == b]
        for i in range(1, len(pts)):
            best_z, best = max(pts[:i], key=lambda p: p[1])
            after = [b for _, b in pts[i:]]
            if best > 0 and max(after) < COLLAPSE_SHARE * best:
                at, last = pts[i][0], pts[-1][1]
                out.append(
                    Finding(
                        component=_scope_component(s),
                        check=f"{s.op} busbw collapse",
                        status="below_spec",
                        measured=round(last, 3),
                        expected=round(best, 3),
                        unit="GB/s",
                        hosts=s.hosts,
                        message=(
                            f"{s.op} ({s.label}) busbw falls from {best:.1f} GB/s at {best_z:,} bytes to "
                            f"{pts[i][1]:.1f} at {at:,} bytes and stays under {max(after):.1f} to the largest size: "
                            "the larger messages take a path that breaks down under load (a congested or "
                            "oversubscribed uplink between racks or leaves, a flapping port, pause-frame storms on "
                            "RoCE) — run the pair tests across the racks (stoker net --pairs) and read the switch "
                            "port counters."
                        ),
                        extra={"op": s.op, "collapse_bytes": at, "cause": "collapse"},
                    )
                )
                break
    return out
