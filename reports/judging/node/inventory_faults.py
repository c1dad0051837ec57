"""GPU faults the inventory reads from real nvidia-smi and kernel-log output (pure): a GPU
nvidia-smi cannot open (fell off the bus), a GPU whose NVLinks are all down (NVML prints a
sentence instead of `Link` lines), a fabric registration that completed with an error
(`fabric.status`), and fatal NVSwitch SXid errors; and a node whose RDMA ports cannot pin memory
(a finite locked-memory limit). Hooked into reports/judging/node/inventory.py."""

from __future__ import annotations

import collections
from collections.abc import Sequence
from typing import Any

from reports.shared.findings import Finding

# what people do about a locked-memory limit, where the limit comes from
MEMLOCK_FIX = (
    "raise it to unlimited where the ranks start: `ulimit -l unlimited` in the job, "
    "`* - memlock unlimited` in /etc/security/limits.conf (PAM logins), "
    "LimitMEMLOCK=infinity in slurmd's systemd unit with PropagateResourceLimitsExcept=MEMLOCK "
    "in slurm.conf (Slurm copies the submitting shell's limit otherwise), "
    "`--ulimit memlock=-1` for a container (docker run), "
    "and IPC_LOCK for a Kubernetes pod"
)


def gpu_faults(r: dict[str, Any]) -> list[str]:
    """What is wrong with one `gpu` record beyond its counters, each as a phrase."""
    out = []
    if r.get("lost"):
        out.append(
            f"lost: nvidia-smi cannot open it ({r['lost']}); the GPU fell off the bus or hung: "
            "drain the node, check the kernel log for Xid 79, reseat or replace the GPU"
        )
    status = r.get("fabric_status")
    if r.get("fabric_state") == "Completed" and status not in (None, "Success"):
        out.append(
            f"fabric registration completed with error {status!r} (should be Success; "
            "check nvidia-fabricmanager and the NVSwitches)"
        )
    return out


def all_links_down(host: str, r: dict[str, Any]) -> Finding | None:
    """A GPU whose NVLinks are all inactive, on a node where other GPUs use NVLink."""
    if r.get("state") != "all inactive":
        return None
    return Finding(
        component="nvlink",
        check="nvlink active",
        status="below_spec",
        measured=0.0,
        expected=None,
        unit="links",
        hosts=(host,),
        extra={"device": r["device"]},
        message=f"{host} {r['device']} ({r.get('bus_id')}): every NVLink inactive (NVML: all links are "
        "inActive) where other GPUs of the node use theirs; check nvidia-smi nvlink -e and the fabric "
        "manager, then reset the GPU.",
    )


def nvswitch_findings(host: str, recs: Sequence[dict[str, Any]]) -> list[Finding]:
    """One finding per NVSwitch with fatal SXid errors in the kernel log (non-fatal ones, such
    as link training interrupts at probe time, are routine and not judged)."""
    fatal: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for r in recs:
        if r.get("component") == "nvswitch" and r.get("fatal"):
            fatal[str(r["device"])].append(r)
    return [
        Finding(
            component="nvlink",
            check="nvswitch errors",
            status="below_spec",
            measured=float(len(rs)),
            expected=0.0,
            unit="fatal SXids",
            hosts=(host,),
            extra={"device": switch, "sxids": sorted({x["sxid"] for x in rs})},
            message=f"{host} {switch} ({rs[0].get('bus_id')}): fatal SXid "
            f"{', '.join(str(x) for x in sorted({x['sxid'] for x in rs}))} in the kernel log; NVLink traffic "
            "through this NVSwitch stalls: reset the GPUs and NVSwitches (reboot) and see the fabric "
            "manager guide's SXid table.",
        )
        for switch, rs in sorted(fatal.items())
    ]


def memlock_finding(host: str, recs: Sequence[dict[str, Any]]) -> Finding | None:
    """A node with RDMA ports whose processes may lock only a finite amount of memory: RDMA
    registers (pins) every buffer it sends from, and past the limit `ibv_reg_mr` fails
    ("Cannot allocate memory"), NCCL stops or falls back to sockets."""
    node = next((r for r in recs if r.get("component") == "node"), None)
    limit = node.get("memlock") if node else None
    rdma = sorted({str(r["device"]) for r in recs if r.get("component") == "network port" and r.get("port")})
    if not rdma or not isinstance(limit, int) or isinstance(limit, bool):
        return None
    return Finding(
        component="node",
        check="memlock",
        status="misconfigured",
        measured=float(limit),
        expected=None,
        unit="bytes",
        hosts=(host,),
        extra={"device": "memlock", "memlock": limit, "rdma_devices": rdma},
        message=f"{host}: locked memory is limited to {limit:,} bytes (ulimit -l {limit // 1024}) on a node "
        f"with RDMA ports ({', '.join(rdma)}): RDMA pins its buffers and fails past the limit; {MEMLOCK_FIX}.",
    )
