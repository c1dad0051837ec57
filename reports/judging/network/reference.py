"""What healthy systems reach, as a yardstick (pure): a network plateau beside the busbw a healthy
system of the same link published (reports/judging/catalog/references.yaml, each figure with its
conditions and source).

Two uses, decided by reports.judging.advertised:
- **no spec** (the link is only detected, or named by the devices an imported log lists): the
  plateau is judged against the healthy figure — ok at REFERENCE_SHARE of it or above, so a fresh
  cluster gets an answer without anyone writing a spec;
- **a spec**: the advertised figure judges, and a plateau at or above the healthy figure is never
  failed (NVLink 4's ring reaches ~81% of its 450 GB/s line rate on a healthy node: NCCL's protocol
  overhead, not a fault); the finding explains it.

Which algorithm ran matters on NVLink 4: NVLink SHARP (NVLS) reduces inside the switch, and its
all_reduce busbw (~480 GB/s on 8 GPUs) is not the ring's (~365). NCCL_ALGO or NCCL_NVLS_ENABLE in
the run's allowlisted environment says which; without them a plateau above the ring's ceiling
(NVLS_MARGIN x its top figure) can only be NVLS.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reports.evidence.sweeps import Sweep
from reports.shared import catalog
from reports.shared.catalog import Link, NetReference
from reports.shared.findings import Status
from reports.shared.units import format_size

REFERENCE_SHARE = 0.90  # a plateau under 90% of what healthy systems reach is below it
NVLS_MARGIN = 1.05  # above 1.05 x the ring's top figure, a plateau was not a ring's
ALGO_VARS = ("NCCL_ALGO", "NCCL_NVLS_ENABLE")


@dataclass(frozen=True, kw_only=True, slots=True)
class Algo:
    name: str  # ring | nvls
    why: str  # how it is known: "NCCL_ALGO=Ring", "busbw above the ring's ceiling", ...


@dataclass(frozen=True, kw_only=True, slots=True)
class Healthy:
    """The healthy figure one plateau is set against."""

    figure: float  # GB/s, per GPU as the plateau is
    ref: NetReference
    algo: Algo
    gpus: int  # GPUs per node in the collective
    min_bytes: int  # the smallest size the source measured at (0: not stated)

    def extra(self) -> dict[str, Any]:
        """The finding's `reference` field (docs/contract.md)."""
        return {
            "GBps": round(self.figure, 3),
            "link": self.ref.link,
            "algo": self.ref.algo,
            "algo_from": self.algo.why,
            "gpus": self.gpus,
            "per": self.ref.per,
            "conditions": self.ref.conditions,
            "source": self.ref.source,
        }


def run_env(manifests: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """The algorithm settings (ALGO_VARS) the run's manifests recorded; the first value seen wins."""
    out: dict[str, str] = {}
    for m in manifests:
        env = m.get("env")
        if isinstance(env, Mapping):
            for k in ALGO_VARS:
                v = env.get(k)
                if isinstance(v, str) and v and k not in out:
                    out[k] = v
    return out


def _nvls_allowed(algo: str) -> bool | None:
    """NCCL_ALGO's word on NVLS: a list ("Ring", "NVLS,Tree") or an exclusion ("^NVLS")."""
    if not algo:
        return None
    exclude = algo.startswith("^")
    names = [a.strip().lower() for a in algo.lstrip("^").split(",") if a.strip()]
    named = any(n.startswith("nvls") for n in names)
    return not named if exclude else named


def algo_of(op: str, busbw: float, link: Link, env: Mapping[str, str]) -> Algo:
    """The algorithm a plateau ran with: ring unless NVLS could and did run (see the module)."""
    ring = catalog.net_reference(link.name, op, "ring")
    if catalog.net_reference(link.name, op, "nvls") is None:
        return Algo(name="ring", why=f"{op} has no in-switch reduction on {link.name}")
    if env.get("NCCL_NVLS_ENABLE", "").strip() == "0":
        return Algo(name="ring", why="NCCL_NVLS_ENABLE=0")
    said = _nvls_allowed(env.get("NCCL_ALGO", ""))
    if said is not None:
        return Algo(name="nvls" if said else "ring", why=f"NCCL_ALGO={env['NCCL_ALGO']}")
    if ring is not None and busbw > NVLS_MARGIN * ring.high_GBps:
        return Algo(name="nvls", why=f"busbw above the ring's ceiling ({ring.high_GBps:g} GB/s): NVLS ran")
    return Algo(
        name="ring",
        why=f"algorithm not recorded, busbw within the ring's range: NVLS on 8 GPUs reaches ~{_top('nvls', link, op)} GB/s",
    )


def _top(algo: str, link: Link, op: str) -> str:
    r = catalog.net_reference(link.name, op, algo)
    return f"{r.high_GBps:g}" if r else "?"


def healthy(
    scope: str,
    c: Sweep,
    busbw: float,
    link: Link | None,
    *,
    nics: float | None,
    gpus_per_node: int | None,
    env: Mapping[str, str],
) -> Healthy | None:
    """The healthy figure for a plateau on `link`, per GPU as the plateau is; None when nothing is
    published for that link, op, algorithm and GPU count. Inter-node figures are per NIC: `nics`
    ports per node shared by its `gpus_per_node` GPUs."""
    if link is None:
        return None
    if scope == "intra-node":
        algo = algo_of(c.op, busbw, link, env)
    else:  # across nodes the references are ring's (references.yaml), measured on 2 nodes
        said = env.get("NCCL_ALGO")
        algo = Algo(name="ring", why=f"NCCL_ALGO={said}" if said else "a 2-node ring assumed")
    ref = catalog.net_reference(link.name, c.op, algo.name)
    if ref is None or ref.scope != scope:
        return None
    if ref.per == "port":
        if not nics or not gpus_per_node:
            return None
        figure: float | None = ref.busbw_GBps * nics / gpus_per_node
        gpus = gpus_per_node
    else:
        gpus = c.ranks_per_node
        figure = ref.figure(gpus)
    if figure is None:
        return None
    return Healthy(figure=figure, ref=ref, algo=algo, gpus=gpus, min_bytes=ref.min_bytes)


# A sweep that stopped short of the reference's size but reached FAR_FROM_BYTES and stayed under
# FAR_SHARE of the healthy figure is a slow link, not a short sweep: a healthy link's busbw at
# 256 MiB is well over half its plateau (NVLink 4 ring all_reduce: ~300 of 365 GB/s; an NDR NIC
# ~40 of 46), so a node whose NVLink runs at 20 GB/s fails on the default profile's 1 GiB sweep.
FAR_SHARE = 0.5
FAR_FROM_BYTES = 256 << 20


def status(busbw: float, h: Healthy, largest: int) -> Status:
    """ok / below_spec against the healthy figure; no_reference when the sweep stopped short of
    the sizes the figure was measured at and stayed under it (a short sweep is not a slow link),
    unless it stayed far under it (FAR_SHARE) at a size past latency (FAR_FROM_BYTES)."""
    if busbw >= REFERENCE_SHARE * h.figure:
        return "ok"
    if largest < h.min_bytes and not (largest >= FAR_FROM_BYTES and busbw < FAR_SHARE * h.figure):
        return "no_reference"
    return "below_spec"


def message(
    scope: str, c: Sweep, size: int, busbw: float, h: Healthy, state: str, advertised: float | None
) -> str:
    """The finding's sentence when the healthy figure judged it (no spec)."""
    head = f"{scope} {c.op} busbw plateau {busbw:.1f} GB/s at {format_size(size)}"
    ref = f"healthy {h.ref.link} {_algo(h)} reference {h.figure:.4g} GB/s for {h.gpus} GPUs ({h.algo.why})"
    adv = f"; advertised {advertised:.4g} GB/s" if advertised else ""
    where = f"no spec: judged against what healthy systems reach, {_src(h)}"
    if state == "ok":
        return f"{head} is {busbw / h.figure:.0%} of the {ref}{adv}: healthy ({where})."
    if state == "no_reference":
        return (
            f"{head} is under the {ref}, but the sweep stopped at {format_size(max(c.sizes))}, short of the "
            f"{format_size(h.min_bytes)} the reference was measured at: sweep to {format_size(h.min_bytes * 2)} "
            "(stoker net --max-bytes, nccl-tests -e) to judge it."
        )
    short = (
        f" — the sweep stopped at {format_size(max(c.sizes))}, short of the reference's "
        f"{format_size(h.min_bytes)}, but a healthy link is past {FAR_SHARE:.0%} of it long before"
        if max(c.sizes) < h.min_bytes
        else ""
    )
    return (
        f"{head} is only {busbw / h.figure:.0%} of the {ref}{adv}, under {REFERENCE_SHARE:.0%} of it{short} ({where}): "
        + (
            "check NVLink/PCIe state (nvidia-smi topo -m, nvidia-smi nvlink -s) and NCCL_P2P settings."
            if scope == "intra-node"
            else "check NIC link rates (ibstat), GPUDirect RDMA and NCCL_IB_HCA, then run --scopes pairs."
        )
    )


def reach(h: Healthy) -> str:
    """'healthy nvlink4 ring systems reach 365 GB/s, source: URL'."""
    return f"healthy {h.ref.link} {_algo(h)} systems reach {h.figure:.4g} GB/s, {_src(h)}"


def explained(head: str, busbw: float, h: Healthy, advertised: float, desc: str, threshold: float) -> str:
    """Why a plateau under the advertised threshold but at or above the healthy figure is not failed."""
    return (
        f"{head} is {busbw / advertised:.0%} of the advertised {advertised:.4g} GB/s ({desc}), under the "
        f"{threshold:.0%} threshold but at or above what {reach(h)}: not failed, no action needed."
    )


def _algo(h: Healthy) -> str:
    return "NVLS" if h.algo.name == "nvls" else h.algo.name


def _src(h: Healthy) -> str:
    return "source: " + h.ref.source.split(" ")[0]
