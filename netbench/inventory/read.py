"""Read one node's inventory (the IO edge): sysfs under `sys_root`, nvidia-smi and the
kernel log through a `run` callable (argument lists, short timeouts), the host-link copy
through a `copier`. Returns `kind: "host"` records and one line per thing skipped.

A missing tool or an unreadable file is recorded as such (`None` and a skipped line),
never as a healthy zero. Tests pass a fixture tree and recorded outputs.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from netbench.inventory import hardware_parse as hp
from netbench.inventory import parse as p
from netbench.inventory.copy import Copier
from netbench.inventory.hardware import ToolOutput, run_keep
from netbench.inventory.hardware import read_text as _read
from netbench.inventory.hardware_parse import (
    hca_max_rate,
    parse_ib_rate,
    parse_ib_state,
    parse_net_speed,
    parse_pcie_speed,
)
from netbench.inventory.kernel_log import read_kernel_log
from netbench.inventory.node_facts import roce_gid_index
from netbench.inventory.rocm_parse import parse_amd_smi_list, parse_amd_smi_static, parse_rocm_topo

# copier({gpu, uuid, numa_node}, bytes, during) -> {h2d_pinned_GBps, d2h_pinned_GBps,
# h2d_pageable_GBps, ...} (netbench/inventory/copy.py); `during` is called while copies are in
# flight, to read the link state under load.
_PCI = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")
# run(args) -> output: a ToolOutput (real runs: kept even when the tool exits non-zero), plain
# text (tests: a recorded output of a successful run) or None (absent, not allowed, hung)
Runner = Callable[[Sequence[str]], "ToolOutput | str | None"]


def _raw(out: ToolOutput | str | None) -> str | None:
    if out is None or isinstance(out, str):
        return out
    return out.text() if (out.stdout or out.stderr) else None


def _text(out: ToolOutput | str | None) -> str | None:
    """What a run printed, when it can be read as the tool's answer: a successful run, or a
    failed nvidia-smi run that names a GPU it could not open (the other GPUs' lines are still
    right). Any other failure (dmesg not permitted, a query the driver refuses) is unreadable."""
    if isinstance(out, ToolOutput) and out.returncode != 0:
        text = _raw(out)
        return text if text is not None and p.parse_lost_gpus(text) else None
    return _raw(out)


@dataclass(kw_only=True, slots=True)
class Inventory:
    records: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def _num(path: Path) -> int | None:
    t = (_read(path) or "").strip()
    return int(t) if t.lstrip("-").isdigit() and int(t) >= 0 else None


def _lower(a: int | None, b: int | None) -> int | None:
    return min(a, b) if a is not None and b is not None else a


def pcie_state(sys_root: Path, address: str | None) -> dict[str, Any]:
    """Current and maximum generation and width of a PCI device, its NUMA node and the bridge
    it sits behind (devices sharing one sit on the same PCIe switch).

    A device's sysfs `max_link_speed`/`max_link_width` is the card's own capability: a Gen5
    NIC in a Gen4 slot says 32 GT/s and trains at 16, which is all that slot can do. So the
    maximum is the lower of the card's and the bridge port's above it (the slot), reached
    through the /sys/bus/pci/devices link into /sys/devices; both are kept."""
    if not address:
        return {}
    dev = sys_root / "bus" / "pci" / "devices" / address
    try:  # the bridge above it: a PCIe switch port, or the CPU's root port
        real = dev.resolve(strict=True)
        up = real.parent.name
    except OSError:
        real, up = dev, ""
    card_gen = p.gen_of(parse_pcie_speed(_read(dev / "max_link_speed") or ""))
    card_width = _num(dev / "max_link_width")
    slot_gen = slot_width = None
    if _PCI.match(up):
        slot_gen = p.gen_of(parse_pcie_speed(_read(real.parent / "max_link_speed") or ""))
        slot_width = _num(real.parent / "max_link_width")
    return {
        "bus_id": address,
        "upstream": up if _PCI.match(up) else None,
        "gen": p.gen_of(parse_pcie_speed(_read(dev / "current_link_speed") or "")),
        "max_gen": _lower(card_gen, slot_gen),
        "width": _num(dev / "current_link_width"),
        "max_width": _lower(card_width, slot_width),
        "card_max_gen": card_gen,
        "card_max_width": card_width,
        "slot_max_gen": slot_gen,
        "slot_max_width": slot_width,
        "numa_node": _num(dev / "numa_node"),
    }


def pci_device(dev_link: Path) -> str | None:
    """The PCI address behind a /sys/class/.../device link: the device itself, or the PCI
    function a virtio device hangs off; None for virtual interfaces."""
    try:
        path = dev_link.resolve(strict=True) if dev_link.exists() else None
    except OSError:
        return None
    while path is not None and path.name and not _PCI.match(path.name):
        path = path.parent if path.parent != path and path.parent.name != "devices" else None
    return path.name if path is not None and path.name else None


def gid_index(port: Path) -> int | None:
    """The RoCE v2 IPv4 GID index NCCL would take on this port, from its GID table (sysfs
    `gids/N`, `gid_attrs/types/N`; reading the type of an empty entry fails: skipped)."""
    gids: dict[int, str] = {}
    types: dict[int, str] = {}
    for f in (port / "gids").glob("*"):
        if f.name.isdigit() and (g := _read(f)):
            gids[int(f.name)] = g.strip()
            types[int(f.name)] = (_read(port / "gid_attrs" / "types" / f.name) or "").strip()
    return roce_gid_index(gids, types)


def network_ports(sys_root: Path) -> list[dict[str, Any]]:
    """Every IB/RoCE port, then every hardware Ethernet interface not already an RDMA port."""
    out: list[dict[str, Any]] = []
    rdma_devices: set[str] = set()
    for port in sorted((sys_root / "class" / "infiniband").glob("*/ports/*")):
        hca = port.parent.parent
        address = pci_device(hca / "device")
        if address:
            rdma_devices.add(address)
        layer = (_read(port / "link_layer") or "").strip() or None
        out.append(
            {
                "component": "network port",
                "device": hca.name,
                "port": port.name,
                "state": parse_ib_state(_read(port / "state") or "") or None,
                "phys_state": parse_ib_state(_read(port / "phys_state") or "") or None,
                "rate_Gbps": parse_ib_rate(_read(port / "rate") or ""),
                "hca_type": (_read(hca / "hca_type") or "").strip() or None,
                "max_rate_Gbps": hca_max_rate(_read(hca / "hca_type")),
                "link_layer": layer,
                # RoCE: the GID index NCCL takes (netbench/inventory/node_facts.py)
                **({"roce_gid_index": gid_index(port)} if layer == "Ethernet" else {}),
                "pcie": pcie_state(sys_root, address),
            }
        )
    for iface in sorted((sys_root / "class" / "net").glob("*")):
        address = pci_device(iface / "device")
        if address is None or address in rdma_devices:  # virtual, or counted as an RDMA port
            continue
        mbps = parse_net_speed(_read(iface / "speed") or "")
        out.append(
            {
                "component": "network port",
                "device": iface.name,
                "port": None,
                "state": (_read(iface / "operstate") or "").strip().upper() or None,
                "phys_state": None,
                "rate_Gbps": mbps / 1000 if mbps else None,
                "hca_type": None,
                "max_rate_Gbps": None,
                "link_layer": "Ethernet",
                "pcie": pcie_state(sys_root, address),
            }
        )
    return out


def _query(
    run: Runner, fields: tuple[str, ...], legacy: tuple[str, ...]
) -> tuple[str | None, tuple[str, ...]]:
    """A --query-gpu run, again with the older field names when the driver refuses a field
    it does not know (it then prints only 'Field "..." is not a valid field to query.')."""
    args = ["nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"]
    out = run(args)
    if "is not a valid field" in (_raw(out) or "") and legacy != fields:
        args = ["nvidia-smi", f"--query-gpu={','.join(legacy)}", "--format=csv,noheader,nounits"]
        return _text(run(args)), legacy
    return _text(out), fields


def _gpu_records(
    rows: list[dict[str, Any]],
    lost: list[dict[str, str]],
    run: Runner,
    kernel_log: str | None,
    under_load: dict[int, dict[str, Any]],
    copies: dict[int, dict[str, Any]],
    skipped: list[str],
) -> list[dict[str, Any]]:
    topo_text = _text(run(["nvidia-smi", "topo", "-m"]))
    topo = p.parse_topo(topo_text) if topo_text else {}
    nvl_text = _text(run(["nvidia-smi", "nvlink", "-s"]))
    nvlink = p.parse_nvlink_status(nvl_text) if nvl_text else {}
    remap_text = _text(
        run(
            [
                "nvidia-smi",
                f"--query-remapped-rows={','.join(p.REMAP_QUERY)}",
                "--format=csv,noheader,nounits",
            ]
        )
    )
    remaps = p.parse_remapped_rows(remap_text) if remap_text else {}
    fab_text, fab_fields = _query(run, p.FABRIC_QUERY, p.LEGACY_FABRIC_QUERY)
    fabric = p.parse_fabric(fab_text, fab_fields) if fab_text else {}
    xids = p.parse_xids(kernel_log) if kernel_log is not None else None
    for what, got in (
        ("nvidia-smi topo -m (GPU-NIC affinity)", topo_text),
        ("nvidia-smi nvlink -s", nvl_text),
        ("nvidia-smi --query-remapped-rows", remap_text),
    ):
        if got is None:
            skipped.append(f"{what}: not readable, not judged")
    if topo_text and rows and not topo:
        skipped.append("nvidia-smi topo -m: no GPU header line found, GPU-NIC affinity not judged")
    mig = sorted(i for i, n in nvlink.items() if n.get("state") == "mig")
    if mig:
        skipped.append(f"NVLink of GPU {', '.join(map(str, mig))}: not queried in MIG mode, not judged")
    if kernel_log is None:
        skipped.append("kernel log (Xid events): not readable by this user, not judged")

    def hw_xids(bus_id: str) -> list[int] | None:
        short = bus_id.rsplit(".", 1)[0]
        return (
            None
            if xids is None
            else sorted({x["xid"] for x in xids if x["hardware"] and short.endswith(x["bus_id"])})
        )

    out = []
    for g in rows:
        name = f"GPU{g['gpu']}"
        link = {**g, **under_load.get(g["gpu"], {})}
        t = topo.get(name, {})
        out.append(
            {
                "component": "host link",
                "device": name,
                "gpu": g["gpu"],
                "uuid": g.get("uuid"),
                "bus_id": g["bus_id"],
                "gen": link["gen"],
                "max_gen": link["max_gen"],
                "width": link["width"],
                "max_width": link["max_width"],
                "read_under_load": g["gpu"] in under_load,
                "numa_node": t.get("numa_node"),
                "nearest_nic": t.get("nearest_nic"),
                "nic_path": t.get("nic_path"),
                **copies.get(g["gpu"], {}),
            }
        )
        rm = remaps.get(g["bus_id"], {})
        fab = fabric.get(g["gpu"], {})
        out.append(
            {
                "component": "gpu",
                "device": name,
                "gpu": g["gpu"],
                "uuid": g.get("uuid"),
                "bus_id": g["bus_id"],
                "ecc_uncorrected": g["ecc_uncorrected"],
                "remap_pending": rm.get("pending"),
                "remap_failure": rm.get("failure"),
                "kernel_log_readable": kernel_log is not None,
                "xids": hw_xids(g["bus_id"]),
                "fabric_state": fab.get("state"),
                "fabric_status": fab.get("status"),
            }
        )
        if g["gpu"] in nvlink and nvlink[g["gpu"]]["state"] in ("listed", "all inactive"):
            out.append(
                {
                    "component": "nvlink",
                    "device": name,
                    "gpu": g["gpu"],
                    "bus_id": g["bus_id"],
                    **nvlink[g["gpu"]],
                }
            )
    for lg in lost:  # nvidia-smi cannot open it: no index, only its bus id and the driver's reason
        out.append(
            {
                "component": "gpu",
                "device": f"GPU {lg['bus_id']}",
                "gpu": None,
                "bus_id": lg["bus_id"],
                "lost": lg["reason"],
                "kernel_log_readable": kernel_log is not None,
                "xids": hw_xids(lg["bus_id"]),
            }
        )
    for sx in p.parse_sxids(kernel_log or ""):
        out.append({"component": "nvswitch", "device": sx["switch"], **sx})
    return out


AMD_STATIC = ("amd-smi", "static", "--asic", "--bus", "--board", "--json")
AMD_LIST = ("amd-smi", "list")
ROCM_PRODUCT = ("rocm-smi", "--showproductname", "--showbus", "--json")
ROCM_TOPO = ("rocm-smi", "--showtopo")


def amd_gpu_records(run: Runner) -> list[dict[str, Any]]:
    """A ROCm node's GPUs as `gpu` records (vendor amd): the model and bus id from amd-smi
    (ROCm 6.x and later), else rocm-smi; the UUID from `amd-smi list`; how many other GPUs each
    reaches over xGMI from `rocm-smi --showtopo` (None where it was not readable). [] when
    neither tool shows a GPU. rocm-smi's and amd-smi's indexes are taken as one numbering
    (both list the GPUs in PCI order)."""
    static = _text(run(list(AMD_STATIC)))
    gpus = parse_amd_smi_static(static) if static else []
    tool = "amd-smi"
    if not gpus:
        text = _text(run(list(ROCM_PRODUCT)))
        gpus = [{**g, "gpu": i} for i, g in enumerate(hp.parse_rocm_smi(text))] if text else []
        tool = "rocm-smi"
    if not gpus:
        return []
    listed_text = _text(run(list(AMD_LIST))) if tool == "amd-smi" else None
    listed = parse_amd_smi_list(listed_text) if listed_text else {}
    topo_text = _text(run(list(ROCM_TOPO)))
    topo = parse_rocm_topo(topo_text) if topo_text else {}
    out = []
    for g in gpus:
        links = topo.get(g["gpu"], {})
        out.append(
            {
                "component": "gpu",
                "device": f"GPU{g['gpu']}",
                "gpu": g["gpu"],
                "vendor": "amd",
                "model": g["name"] or None,
                "product_name": g.get("product_name"),
                "bus_id": g["bus_id"] or listed.get(g["gpu"], {}).get("bus_id"),
                "uuid": listed.get(g["gpu"], {}).get("uuid"),
                "xgmi_peers": links.get("xgmi_peers"),
                "pcie_peers": links.get("pcie_peers"),
                "read_with": tool,
            }
        )
    return out


def read_inventory(
    *,
    sys_root: str | Path = "/sys",
    run: Runner | None = None,
    kernel_log: Callable[[], str | None] | None = None,
    copier: Copier | None = None,
    copy_bytes: int = 1 << 30,
    make_copier: Callable[[], Copier | None] | None = None,
) -> Inventory:
    """`make_copier` builds the copier only once nvidia-smi has shown a GPU: importing
    torch to ask CUDA costs ~2 s of CPU, which a CPU node or a pod without GPUs never needs."""
    root = Path(sys_root)
    run = run or run_keep
    inv = Inventory()
    ports = network_ports(root)
    inv.records += ports
    if not (root / "class" / "infiniband").is_dir():
        inv.skipped.append("InfiniBand/RoCE: no /sys/class/infiniband, no RDMA ports on this node")
    text, fields = _query(run, p.GPU_QUERY, p.LEGACY_GPU_QUERY)
    rows = p.parse_gpu_query(text, fields) if text else []
    lost = p.parse_lost_gpus(text or "")
    if not rows and not lost:
        amd = amd_gpu_records(run)
        inv.records += amd
        inv.skipped.append(
            f"GPUs: {len(amd)} AMD GPU(s) read with {amd[0]['read_with']} (model, bus id, xGMI peers); "
            "their PCIe link state, GPU errors and host-link copy test are not read on ROCm"
            if amd
            else "GPUs: nvidia-smi absent or shows no GPU: no GPU link state, NVLink, GPU errors "
            "or host-link copy test"
        )
        return inv
    for lg in lost:
        inv.skipped.append(
            f"GPU {lg['bus_id']}: nvidia-smi cannot open it ({lg['reason']}); read from the kernel log only"
        )
    under_load: dict[int, dict[str, Any]] = {}
    copies: dict[int, dict[str, Any]] = {}
    if copier is None and make_copier is not None:
        copier = make_copier()
    if copier is None:
        inv.skipped.append(
            "host-link copy test: not run (no CUDA torch); GPU link state read at idle, "
            "where a GPU may run its link at a lower generation to save power"
        )
    else:
        for g in rows:

            def during(i: int = g["gpu"]) -> None:
                again, _ = _query(run, fields, fields)
                now = {r["gpu"]: r for r in p.parse_gpu_query(again or "", fields)}
                if i in now:
                    under_load[i] = {k: now[i][k] for k in ("gen", "width")}

            which = {
                "gpu": g["gpu"],
                "uuid": g.get("uuid"),
                "numa_node": _num(root / "bus" / "pci" / "devices" / g["bus_id"] / "numa_node"),
            }
            try:
                copies[g["gpu"]] = {**copier(which, copy_bytes, during), "copy_bytes": copy_bytes}
            except Exception as exc:  # one GPU's CUDA error (OOM, exclusive mode) costs its copy only
                first = (str(exc).strip().splitlines() or [""])[0][:160]
                inv.skipped.append(f"host-link copy test of GPU{g['gpu']}: {type(exc).__name__}: {first}")
    log = kernel_log() if kernel_log else read_kernel_log(lambda argv: _text(run(argv)))
    inv.records += _gpu_records(rows, lost, run, log, under_load, copies, inv.skipped)
    return inv
