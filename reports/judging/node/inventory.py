"""Judge the node inventory (DIR/host.jsonl, `kind: "host"` records) into findings (pure).

Without a spec: a PCIe link below its own maximum generation or width, a compute network
port (reports/judging/node/port_roles.py) down, below its adapter's supported rate or slower than
its siblings on the same node (unused, storage and management ports are not judged), a GPU without a near NIC where the others
have one, an inactive NVLink, uncorrected ECC errors, pending or failed row remaps, hardware
Xid events, a fabric manager that has not finished; each a `below_spec` finding naming the
host and the device. A node with RDMA ports and a finite locked-memory limit is `misconfigured`. What could not be read (kernel log) is `no_reference`, never "0 errors".
With a spec or the catalog: the port rate and count against the advertised fabric, and the
measured host-link copy against its PCIe link's catalog figure.
"""

from __future__ import annotations

import collections
from collections.abc import Sequence
from typing import Any

from reports.judging.node.inventory_faults import (
    all_links_down,
    gpu_faults,
    memlock_finding,
    nvswitch_findings,
)
from reports.judging.node.port_roles import down_trained
from reports.shared import catalog
from reports.shared.errors import UsageError
from reports.shared.findings import Component, Finding
from reports.shared.port_rule import gpu_affine_nics, port_role
from reports.shared.spec import Spec

# A pinned copy moves payload in PCIe TLPs: headers, flow control and completions cost
# ~10-15% of the raw rate (55 GB/s on a 63 GB/s Gen5 x16 link, tests/data/gpu), so a host
# link under 75% of its catalog figure is wrong, not overhead.
HOST_LINK_SHARE = 0.75
# Components whose trouble explains a slow network measurement on that host.
NETWORK_CAUSES = ("network port",)


def _bad(
    component: Component,
    check: str,
    host: str,
    message: str,
    measured: float | None = None,
    expected: float | None = None,
    unit: str = "",
    **extra: Any,
) -> Finding:
    return Finding(
        component=component,
        check=check,
        status="below_spec",
        measured=measured,
        expected=expected,
        unit=unit,
        hosts=(host,),
        message=message.rstrip(".") + ".",
        extra={"device": extra.pop("device"), **extra},
    )


def _where(r: dict[str, Any]) -> str:
    port = f" port {r['port']}" if r.get("port") else ""
    bus = r.get("bus_id") or (r.get("pcie") or {}).get("bus_id")
    return f"{r['device']}{port}" + (f" ({bus})" if bus and r["component"] != "network port" else "")


def pcie_finding(host: str, r: dict[str, Any], link: dict[str, Any], component: Component) -> Finding | None:
    """A link trained below its own maximum. An idle GPU may lower its generation to save
    power, so a GPU's generation counts only when read under load; width always counts."""
    gen, mgen, width, mwidth = (link.get(k) for k in ("gen", "max_gen", "width", "max_width"))
    low_width = width is not None and mwidth is not None and width < mwidth
    idle_gpu = component == "host link" and not r.get("read_under_load")
    low_gen = gen is not None and mgen is not None and gen < mgen and not idle_gpu
    if not (low_width or low_gen):
        return None
    return _bad(
        component,
        "pcie link trained",
        host,
        f"{host} {_where(r)}: PCIe link trained at Gen{gen} x{width}, should be Gen{mgen} x{mwidth}; "
        "reseat the card or check its slot and riser, then reboot and re-read",
        measured=float(width or 0),
        expected=float(mwidth or 0),
        unit="lanes",
        device=r["device"],
        bus_id=link.get("bus_id") or r.get("bus_id"),
        gen=gen,
        max_gen=mgen,
    )


def _ports(
    host: str, ports: list[dict[str, Any]], spec: Spec | None, affine: set[str] | None
) -> list[Finding]:
    out = []
    # unused, storage and management ports carry no promise (listed in a note: port_roles.py)
    rdma = [p for p in ports if port_role(p, affine) == "compute"]
    for p in rdma:
        if p.get("state") != "ACTIVE":
            out.append(
                _bad(
                    "network port",
                    "port state",
                    host,
                    f"{host} {_where(p)}: port is {p.get('state') or 'unknown'} "
                    f"({p.get('phys_state') or 'physical state unknown'}), should be ACTIVE; check the cable "
                    "and the switch port",
                    device=p["device"],
                    port=p["port"],
                )
            )
    active = [p for p in rdma if p.get("state") == "ACTIVE" and p.get("rate_Gbps")]
    link = spec.inter_node_link if spec else None
    per_port = link.GBps * 8 if link is not None and link.per == "port" else None  # Gb/s the spec promises
    slow = [f for f in (down_trained(host, p, per_port) for p in active) if f is not None]
    out += slow
    named = {(f.extra["device"], f.extra["port"]) for f in slow}  # one finding per slow port
    for layer in sorted({p.get("link_layer") or "" for p in active}):
        group = [p for p in active if (p.get("link_layer") or "") == layer]
        rates = collections.Counter(p["rate_Gbps"] for p in group)
        usual, n = rates.most_common(1)[0]
        if n < 2:  # no majority to call the usual rate
            continue
        for p in group:
            if p["rate_Gbps"] < usual and (p["device"], p["port"]) not in named:
                out.append(
                    _bad(
                        "network port",
                        "port rate vs siblings",
                        host,
                        f"{host} {_where(p)} at {p['rate_Gbps']:g} Gb/s, its {n} sibling {layer} ports at "
                        f"{usual:g} Gb/s; check the cable and the switch port's speed setting",
                        measured=p["rate_Gbps"],
                        expected=usual,
                        unit="Gb/s",
                        device=p["device"],
                        port=p["port"],
                    )
                )
    if link is not None and link.per == "port" and spec is not None and spec.inter_node_count and rdma:
        want = spec.inter_node_count
        full = [p for p in active if p["rate_Gbps"] / 8 >= link.GBps * 0.99]
        if len(full) < want:
            out.append(
                _bad(
                    "network port",
                    "ports vs advertised fabric",
                    host,
                    f"{host}: {len(full)} active port(s) at {link.GBps * 8:g} Gb/s, the spec advertises "
                    f"{spec.inter_node_desc or f'{want} x {link.name}'}",
                    measured=float(len(full)),
                    expected=float(want),
                    unit="ports",
                    device="network ports",
                )
            )
    for p in ports:
        f = pcie_finding(host, p, p.get("pcie") or {}, "network port")
        if f is not None:
            out.append(f)
    return out


def _copy_finding(host: str, r: dict[str, Any]) -> Finding | None:
    got = r.get("h2d_pinned_GBps")
    if got is None:
        return None
    gen, width = r.get("gen"), r.get("width")
    try:
        lk = catalog.link(f"pcie{gen}-x16")
    except UsageError:  # no catalog figure for this generation: say so, never guess
        lk = None
    d2h, pageable = r.get("d2h_pinned_GBps"), r.get("h2d_pageable_GBps")
    figures = f"pinned H2D {got:.1f}, pinned D2H {d2h if d2h is not None else '-'}, pageable H2D {pageable if pageable is not None else '-'} GB/s"
    base = dict(
        component="host link",
        check="host link copy",
        measured=got,
        unit="GB/s",
        hosts=(host,),
        extra={
            "device": r["device"],
            "bus_id": r.get("bus_id"),
            "d2h_pinned_GBps": d2h,
            "h2d_pageable_GBps": pageable,
        },
    )
    if lk is None or not width:
        return Finding(
            status="no_reference",
            expected=None,
            message=f"{host} {_where(r)}: {figures}; no catalog figure for a Gen{gen} x{width} link.",
            **base,
        )
    want = lk.GBps * width / 16
    ok = min(x for x in (got, d2h) if x is not None) >= HOST_LINK_SHARE * want
    verdict = f"within {HOST_LINK_SHARE:.0%} of" if ok else f"under {HOST_LINK_SHARE:.0%} of"
    return Finding(
        status="ok" if ok else "below_spec",
        expected=round(want, 2),
        message=f"{host} {_where(r)}: {figures}, {verdict} the Gen{gen} x{width} link's {want:.1f} GB/s "
        f"({lk.name}, {lk.source.split(';')[0]}).",
        **base,
    )


def _gpus(host: str, recs: list[dict[str, Any]]) -> list[Finding]:
    out: list[Finding] = []
    links = [r for r in recs if r["component"] == "host link"]
    near = [r for r in links if r.get("nic_path") in ("PIX", "PXB")]
    for r in links:
        f = pcie_finding(host, r, r, "host link")
        if f is not None:
            out.append(f)
        if near and r not in near and r.get("nic_path"):
            out.append(
                _bad(
                    "gpu",
                    "nearest NIC",
                    host,
                    f"{host} {_where(r)}: nearest NIC {r.get('nearest_nic')} via {r['nic_path']} (through the CPU), "
                    f"where {len(near)} other GPU(s) have one behind their PCIe switch; check the NIC's slot",
                    device=r["device"],
                    nearest_nic=r.get("nearest_nic"),
                )
            )
        c = _copy_finding(host, r)
        if c is not None:
            out.append(c)
    nvl = [r for r in recs if r["component"] == "nvlink"]
    # a PCIe card without bridges lists its links as inactive: a fault only where NVLink is in use
    in_use = any(r.get("links", 0) > len(r.get("inactive") or []) for r in nvl)
    for r in nvl:
        down = all_links_down(host, r) if in_use else None  # NVLink down (inventory_faults.py)
        if down is not None:
            out.append(down)
        elif in_use and r.get("inactive"):
            out.append(
                _bad(
                    "nvlink",
                    "nvlink active",
                    host,
                    f"{host} {_where(r)}: NVLink(s) {', '.join(map(str, r['inactive']))} inactive of {r.get('links')}; "
                    "check nvidia-smi nvlink -e and the fabric manager, then reset the GPU",
                    measured=float(r["links"] - len(r["inactive"])),
                    expected=float(r["links"]),
                    unit="links",
                    device=r["device"],
                )
            )
    errs = [r for r in recs if r["component"] == "gpu"]
    for r in errs:
        bad = []
        if r.get("ecc_uncorrected"):
            bad.append(f"{r['ecc_uncorrected']} uncorrected ECC error(s)")
        if r.get("remap_pending"):
            bad.append("row remap pending (needs a GPU reset)")
        if r.get("remap_failure"):
            bad.append("row remapping failed (replace the GPU)")
        if r.get("xids"):
            bad.append(f"hardware Xid {', '.join(map(str, r['xids']))} in the kernel log")
        if r.get("fabric_state") not in (None, "Completed"):
            bad.append(
                f"fabric manager state {r['fabric_state']} (should be Completed; start nvidia-fabricmanager)"
            )
        bad += gpu_faults(r)  # lost GPU, fabric.status (inventory_faults.py)
        if bad:
            out.append(
                _bad("gpu", "gpu errors", host, f"{host} {_where(r)}: " + "; ".join(bad), device=r["device"])
            )
    # Xid events are NVIDIA's (an AMD GPU record says what the GPU is, not its kernel log)
    if errs and not all(r.get("kernel_log_readable") for r in errs if r.get("vendor") != "amd"):
        out.append(
            Finding(
                component="gpu",
                check="Xid events",
                status="no_reference",
                measured=None,
                expected=None,
                unit="",
                hosts=(host,),
                extra={"device": "kernel log"},
                message=f"{host}: kernel log not readable (neither `dmesg` nor `journalctl -k` answered), "
                "Xid events not checked (not 0 errors); run as root, or add the user to the "
                "systemd-journal (or adm) group so the journal is readable, or set kernel.dmesg_restrict=0.",
            )
        )
    return out


def judge_inventory(records: Sequence[dict[str, Any]], spec: Spec | None = None) -> list[Finding]:
    """Findings for the inventory records of every host, in host order. Only the latest
    record of each (host, component, device, port) counts, so a re-run replaces a read."""
    latest: dict[tuple[Any, ...], dict[str, Any]] = {}
    for r in records:
        latest[(r.get("host"), r.get("component"), r.get("device"), r.get("port"))] = r
    by_host: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for r in latest.values():
        by_host[str(r.get("host", "?"))].append(r)
    out: list[Finding] = []
    for host in sorted(by_host):
        recs = by_host[host]
        ports = [r for r in recs if r["component"] == "network port"]
        out += _ports(host, ports, spec, gpu_affine_nics(recs))
        out += _gpus(host, recs)
        out += nvswitch_findings(host, recs)  # SXid from the kernel log
        out += [f for f in [memlock_finding(host, recs)] if f]  # RDMA cannot pin its buffers
    return out


def explain(findings: list[Finding], inventory: list[Finding]) -> list[Finding]:
    """Network findings on a host with a degraded port, pointed at it: 'node7 inter-node busbw
    48% ...: see mlx5_3 port 1 at 200 Gb/s'. Findings with no hosts match every host."""
    causes = [f for f in inventory if f.status == "below_spec" and f.component in NETWORK_CAUSES]
    if not causes:
        return findings
    out = []
    for f in findings:
        if f.component in ("inter-node network", "node", "link") and f.status in (
            "below_spec",
            "suspect",
            "no_reference",
        ):
            hit = [c for c in causes if not f.hosts or set(c.hosts) & set(f.hosts)]
            if hit:
                why = "; ".join(c.message.split(";")[0].rstrip(".") for c in hit[:3])
                f = Finding(
                    component=f.component,
                    check=f.check,
                    status=f.status,
                    measured=f.measured,
                    expected=f.expected,
                    unit=f.unit,
                    hosts=f.hosts,
                    message=f"{f.message.rstrip('.')}; inventory: {why}.",
                    extra={**f.extra, "explained_by": [c.message.split(";")[0].rstrip(".") for c in hit]},
                )
        out.append(f)
    return out


def host_link_figures(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The measured host link for the starvation model: the slowest GPU's pinned H2D (the
    dataloader's leg) and pinned D2H (the async checkpoint's copy-out), with where it came from."""
    links = [r for r in records if r.get("component") == "host link" and r.get("h2d_pinned_GBps") is not None]
    if not links:
        return {}
    h2d = min(links, key=lambda r: r["h2d_pinned_GBps"])
    d2h = min(
        (r for r in links if r.get("d2h_pinned_GBps") is not None),
        key=lambda r: r["d2h_pinned_GBps"],
        default=None,
    )
    return {
        "host_h2d_GBps": h2d["h2d_pinned_GBps"],
        "host_d2h_GBps": d2h["d2h_pinned_GBps"] if d2h else None,
        "host_link_desc": f"measured pinned copies, slowest of {len(links)} GPU(s) ({h2d.get('host')} {h2d['device']})",
    }
