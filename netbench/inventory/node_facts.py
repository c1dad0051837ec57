"""Facts of a node that decide whether RDMA can work as NCCL wants it (pure), read by
netbench/inventory/node.py into the `node` and `network port` records:

- the locked-memory limit (`/proc/self/limits`, "Max locked memory"): RDMA registers (pins) its
  buffers, and a limit such as the common 8 MiB or 64 KiB default makes `ibv_reg_mr` fail;
- whether GPU Direct RDMA is possible: the `nvidia_peermem` (or the older Mellanox
  `nv_peer_mem`) module loaded, or dma-buf: a kernel of 5.12 or later with NVIDIA's open kernel
  module (its `/proc/driver/nvidia/version` says "Open Kernel Module"), which NCCL 2.19 and
  later use without a peer-memory module;
- the RoCE GID index NCCL would choose on a port, from the port's GID table.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping, Sequence

UNLIMITED = "unlimited"
# the modules that let the NIC read GPU memory: NVIDIA's own (driver 470 and later), then
# Mellanox's older out-of-tree one (first found names the record's `gdr`)
PEERMEM_MODULES = ("nvidia_peermem", "nv_peer_mem")
DMABUF_KERNEL = (5, 12)  # dma-buf RDMA of device memory entered Linux in 5.12
OPEN_MODULE = "Open Kernel Module"  # /proc/driver/nvidia/version of the open flavour
# the sysfs gid_attrs/types text of a RoCE v2 entry (rdma-core's show_gids reads the same file)
ROCE_V2 = "RoCE v2"


def parse_memlock(limits: str | None) -> int | str | None:
    """The soft "Max locked memory" of a /proc/PID/limits text: bytes, "unlimited", or None
    where the text does not say."""
    m = re.search(r"^Max locked memory\s+(\S+)", limits or "", flags=re.M)
    if not m:
        return None
    value = m.group(1)
    return UNLIMITED if value == UNLIMITED else int(value) if value.isdigit() else None


def kernel_at_least(release: str | None, want: tuple[int, int]) -> bool:
    m = re.match(r"(\d+)\.(\d+)", (release or "").strip())
    return m is not None and (int(m.group(1)), int(m.group(2))) >= want


def gdr_support(modules: Sequence[str], kernel: str | None, nvidia_version: str | None) -> str | None:
    """How GPU Direct RDMA can work here: a peer-memory module's name, "dma-buf", "none"; None
    without an NVIDIA driver (no /proc/driver/nvidia/version: nothing to say)."""
    if nvidia_version is None:
        return None
    loaded = next((m for m in PEERMEM_MODULES if m in modules), None)
    if loaded:
        return loaded
    if OPEN_MODULE in nvidia_version and kernel_at_least(kernel, DMABUF_KERNEL):
        return "dma-buf"
    return "none"


def ipv4_mapped(gid: str) -> str | None:
    """'0000:0000:0000:0000:0000:ffff:ac13:003c' -> '172.19.0.60'; None for any other GID."""
    try:
        mapped = ipaddress.IPv6Address(gid.strip()).ipv4_mapped
    except ValueError:
        return None
    return str(mapped) if mapped and str(mapped) != "0.0.0.0" else None


def roce_gid_index(gids: Mapping[int, str], types: Mapping[int, str]) -> int | None:
    """The GID index NCCL takes by default on a RoCE port (NCCL_IB_ADDR_FAMILY AF_INET,
    NCCL_IB_ROCE_VERSION_NUM 2: net_ib's ncclIbGetGidIndex keeps the first entry that matches
    both, ncclIbRoceGetVersionNum reading gid_attrs/types): the lowest index whose GID is an
    IPv4-mapped address (::ffff:a.b.c.d) of type RoCE v2. None where there is none: NCCL then
    falls back on its own and stoker names no index."""
    return next(
        (i for i in sorted(gids) if ipv4_mapped(gids[i]) and (types.get(i) or "").strip() == ROCE_V2),
        None,
    )
