"""A run on a machine without a GPU (pure): what its figures are for, and a spec whose GPUs the
machine does not have.

`stoker run` on a CPU machine measures gloo ranks over the machine's loopback and its disk: the
CPU path, which tests stoker and this machine, not a GPU cluster (`cpu_path`). A spec that
promises GPUs (and the links between them) judged on such a run is not a bandwidth failure of
NVLink: the hardware under test is not the hardware promised. One finding says so (`mismatch`),
and the network figures are shown, not compared with links the machine does not have
(`not_compared`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from reports.judging.coverage import gpus_seen
from reports.shared.findings import Finding
from reports.shared.spec import Spec

NETWORK = ("intra-node network", "inter-node network")


def cpu_path(
    cpu_ranks: bool,
    host: Sequence[Mapping[str, Any]],
    hardware: Mapping[str, Any],
    manifests: Sequence[Mapping[str, Any]],
) -> bool:
    """Every collective ran on CPU ranks, the node inventory ran (stoker's own run, not an
    imported log) and no host showed a GPU."""
    inventoried = any(r.get("component") == "node" for r in host)
    seen = gpus_seen(hardware, manifests).get("gpu_count")
    return cpu_ranks and inventoried and not (isinstance(seen, int) and seen > 0)


def promises_gpus(spec: Spec | None) -> bool:
    """The spec as written names an accelerator (H100-SXM, MI300X, ...). A GPU count alone is
    not such a promise: a CPU bed's spec gives `gpus_per_node` as the ranks each node runs, to
    share its inter-node figure among them, and is judged as before."""
    return spec is not None and spec.accelerator is not None


def _links(spec: Spec) -> str:
    names = [lk.name for lk in (spec.intra_node_link, spec.inter_node_link) if lk is not None]
    return " and ".join(dict.fromkeys(names))


def mismatch(spec: Spec, hosts: Sequence[str]) -> Finding:
    """The one finding for a spec whose GPUs this machine does not have: failing (the hardware
    promised was not found), never a bandwidth verdict."""
    count = (spec.gpus_per_node or 0) if "gpus_per_node" not in spec.defaulted else 0
    acc = spec.accelerator.name if spec.accelerator is not None else "GPU"
    want = f"{count} x {acc} per node" if count else f"{acc} GPUs"
    links = _links(spec)
    where = ", ".join(hosts) or "this machine"
    return Finding(
        component="gpu",
        check="hardware: promised vs found",
        status="below_spec",
        measured=0.0,
        expected=float(count) if count else None,
        unit="GPUs",
        hosts=tuple(hosts),
        message=(
            f"the spec promises {want}{f' with {links} links' if links else ''}; {where} showed no GPU and "
            "its ranks ran gloo on the CPU: the hardware under test is not the hardware in the spec, so "
            "none of its GPU or link figures was measured; run on the GPU nodes the spec describes, or "
            "judge this machine with a spec of its own."
        ),
        extra={"basis": "spec", "cause": "hardware_mismatch", "gpus_found": 0},
    )


def not_compared(f: Finding) -> Finding:
    """A network figure the spec's GPU links were compared with: shown, measured on CPU ranks,
    not compared (`no_reference`)."""
    if f.component not in NETWORK or f.expected is None:
        return f
    msg = (
        f"{f.check} {f.measured:.3g} {f.unit}: measured by gloo ranks on the CPU (this machine's "
        "loopback), not compared with the spec's GPU links, which this machine does not have."
        if f.measured is not None
        else f"{f.check}: measured on the CPU, not compared with the spec's GPU links."
    )
    return dataclasses.replace(f, status="no_reference", expected=None, message=msg)
