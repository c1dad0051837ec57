"""Which role each network port of a node plays (pure), on the floor because two sides apply
it: the report judges only the compute ports against the GPUs' promise
(reports/judging/node/port_roles.py), and every GPU rank stoker starts names those same ports to
NCCL (netbench/nccl_env.py: NCCL_IB_HCA).

A port's role comes from the inventory's GPU-NIC affinity (`nvidia-smi topo -m`, the `host
link` records' `nearest_nic` behind a PCIe switch): the RDMA ports of those NICs are the
compute fabric NCCL uses; other RDMA ports are unused (not ACTIVE) or storage (ACTIVE), and
ports without RDMA are management. Where no GPU has a NIC behind its PCIe switch (no GPU, no
`topo -m`, a VM whose NICs are all through the CPU) every RDMA port is compute.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

Role = Literal["compute", "unused", "storage", "management"]
# topo -m paths through PCIe switches only: a NIC there is a GPU's own rail
NEAR_PATHS = ("PIX", "PXB")
# (role, when): the first that holds names the port's role. `affine` is None where the node
# shows no GPU-NIC affinity to go by.
RoleRule = Callable[[dict[str, Any], "set[str] | None"], bool]
ROLE_RULES: tuple[tuple[Role, RoleRule], ...] = (
    ("management", lambda p, affine: not p.get("port")),
    ("compute", lambda p, affine: affine is None or p.get("device") in affine),
    ("storage", lambda p, affine: p.get("state") == "ACTIVE"),
    ("unused", lambda p, affine: True),
)


def gpu_affine_nics(recs: Sequence[dict[str, Any]]) -> set[str] | None:
    """The NICs some GPU reaches through PCIe switches only; None where no GPU has one."""
    near = {
        r["nearest_nic"]
        for r in recs
        if r.get("component") == "host link" and r.get("nic_path") in NEAR_PATHS and r.get("nearest_nic")
    }
    return near or None


def port_role(port: dict[str, Any], affine: set[str] | None) -> Role:
    return next(role for role, holds in ROLE_RULES if holds(port, affine))
