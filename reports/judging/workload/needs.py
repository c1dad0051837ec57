"""A workload's needs as coverage lines (pure): what the job the model prices needs measured.

A spec promises figures; a workload needs them. Each need is one coverage line
(reports.judging.coverage.Line), judged by the same rule: a need not measured keeps the
verdict from `pass` (it is `incomplete`) and is named with why and how to measure it.

- the network scopes its parallelism crosses: tensor parallel inside a node (across nodes
  when the group is larger than a node), data parallel across nodes when the job has more
  data-parallel ranks than a node holds;
- the storage it reads and writes: the dataloader's reads and the checkpoint's save (of the
  workload's format, or fio's figure with the stated overhead), on the paths it names (else
  on shared storage when measured there, else anywhere);
- the accelerator its compute figure assumes: a matmul measured on that accelerator (stoker
  compute, reports.judging.node.compute.measured_on), or the workload's own `compute_s`. A CPU's
  matmul never stands for a GPU's, and the catalog's peak is an assumption, not a measurement.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from reports.judging.coverage import Line, Scope
from reports.judging.node.compute import CPU, devices, measured_devices
from reports.judging.storage import ckpt_save, savepath
from reports.judging.workload.model import gpus_per_node
from reports.judging.workload.workload import Workload
from reports.shared.records import IoRecord
from reports.shared.spec import Spec, match_storage


def place(io: Sequence[IoRecord], workload: str, path: str | None, spec: Spec | None) -> list[IoRecord]:
    """The records of `workload` at its place: on `path` if the workload names one, else on
    shared storage if any, else anywhere."""
    recs = [r for r in io if r.workload == workload and not r.failed]
    if path:
        return [r for r in recs if r.path == path or r.path.startswith(path.rstrip("/") + "/")]

    def kind(r: IoRecord) -> str:
        e = match_storage(r.path, spec.storage) if spec else None
        return e.kind if e else r.scope

    shared = [r for r in recs if kind(r) == "shared"]
    return shared or recs


def pick_io(io: Sequence[IoRecord], workload: str, path: str | None, spec: Spec | None) -> IoRecord | None:
    """The best record of `workload` at its place (the one the model takes)."""
    return max(place(io, workload, path, spec), key=lambda r: r.bw_GBps, default=None)


def runs_on(w: Workload, spec: Spec | None) -> str | None:
    """The accelerator the workload runs on: its own `accelerator`, else the spec's (as given or
    detected), else None (a GPU, model not named)."""
    if w.accelerator:
        return w.accelerator
    return spec.accelerator.name if spec is not None and spec.accelerator is not None else None


def _skipped(phase: str, skipped: Collection[str]) -> str:
    return f"the {phase} phase was left out (--skip {phase})" if phase in skipped else ""


def _network(
    w: Workload,
    spec: Spec | None,
    scopes: Collection[str],
    nodes: int,
    skipped: Collection[str],
    scope: Scope,
) -> list[Line]:
    if not w.is_training or w.gpus is None:
        return []
    g = gpus_per_node(w, spec)
    n, t = w.gpus, w.tensor
    d = n // t
    job_nodes = ckpt_save.job_nodes(n, g)
    needs: dict[str, list[str]] = {}
    if t > 1:
        needs.setdefault("inter-node" if t > g else "intra-node", []).append(f"tensor parallel over {t} GPUs")
    if d > 1:
        where = "inter-node" if d > max(1, g // t) else "intra-node"
        needs.setdefault(where, []).append(f"{w.data.upper()} data parallel over {d} ranks")
    out = []
    for net in ("intra-node", "inter-node"):
        if net not in needs:
            continue
        what = f"workload {w.name}: {net} network ({', '.join(needs[net])}; {n} GPUs on {job_nodes} nodes of {g})"
        if net in scopes:
            out.append(Line(what=what, status="measured"))
            continue
        if net == "inter-node":
            why = _skipped("network", skipped) or (
                f"the run had {nodes} node{'s' if nodes != 1 else ''}; the job crosses nodes and crossing "
                "them needs a sweep over 2 nodes or more"
            )
            how = f"stoker submit --nodes 2 --gpus-per-node {g} --workload WORKLOAD (the acceptance job)"
            if scope == "node":
                out.append(Line(what=what, status="out_of_scope", why=f"--scope node; {why}", how=how))
                continue
        else:
            why = _skipped("network", skipped) or "no sweep ran between the GPUs of one node"
            how = f"stoker run --workload WORKLOAD on a node with its {g} GPUs visible (one rank per GPU)"
        out.append(Line(what=what, status="unmeasured", why=why, how=how))
    return out


def _storage(
    w: Workload, spec: Spec | None, io: Sequence[IoRecord], skipped: Collection[str], scope: Scope
) -> list[Line]:
    out = []
    wants: list[tuple[str, str, str | None, bool]] = []  # (need, record workload, path, measured)
    if w.dataloader is not None:
        path = w.dataloader.path
        wants.append(
            ("dataloader read", "dataloader_read", path, bool(place(io, "dataloader_read", path, spec)))
        )
    if w.checkpoint is not None and w.params is not None:
        path, fmt = w.checkpoint.path, w.checkpoint.format
        got = savepath.pick(place(io, "checkpoint_write", path, spec), fmt) is not None
        wants.append((f"checkpoint write ({fmt})", "checkpoint_write", path, got))
    for need, rec, path, got in wants:
        where = f"on {path}" if path else "on the storage it uses (shared if measured, else any)"
        what = f"workload {w.name}: {need} {where}"
        if got:
            out.append(Line(what=what, status="measured"))
            continue
        phase = rec.split("_")[0]
        why = _skipped("storage", skipped) or f"no {rec} record {'on ' + path if path else 'anywhere'}"
        how = f"stoker io --path {path or 'DIR'} --workloads {phase} (or stoker run --path {path or 'DIR'})"
        entry = match_storage(path, spec.storage) if path and spec else None
        if scope == "node" and entry is not None and entry.kind == "shared":
            out.append(Line(what=what, status="out_of_scope", why=f"--scope node; {why}", how=how))
        else:
            out.append(Line(what=what, status="unmeasured", why=why, how=how))
    return out


def _accelerator(
    w: Workload, spec: Spec | None, compute: Sequence[Mapping[str, Any]], skipped: Collection[str]
) -> list[Line]:
    if not w.is_training:
        return []
    target = runs_on(w, spec)
    on = "CPU" if target == CPU else target or "GPUs (model not named)"
    what = f"workload {w.name}: compute time per step on {on}"
    if w.compute_s is not None:
        return [Line(what=f"{what} (compute_s given in the workload)", status="measured")]
    if measured_devices(compute, w.dtype, target):
        return [Line(what=f"{what} ({w.dtype} matmul measured there)", status="measured")]
    others = sorted(
        {d.name or ("CPU" if d.gpu is None else "GPU") for d in devices(compute) if d.dtype == w.dtype}
    )
    if others:
        why = (
            f"the {w.dtype} matmul was measured on {', '.join(others)}, not on {on}: "
            "a figure stands only for the accelerator it ran on"
        )
    else:
        why = _skipped("compute", skipped) or f"no {w.dtype} matmul was measured on {on}"
    if spec is not None and spec.accelerator is not None and target == spec.accelerator.name:
        why += " (the model assumes the catalog's peak x MFU)"
    where = "a node of the cluster" if target != CPU else "the machine"
    how = f"stoker compute on {where} (a phase of stoker run), or compute_s in the workload"
    return [Line(what=what, status="unmeasured", why=why, how=how)]


def need_lines(
    w: Workload,
    spec: Spec | None,
    *,
    scopes: Collection[str],
    nodes: int,
    io: Sequence[IoRecord],
    compute: Sequence[Mapping[str, Any]],
    skipped: Collection[str] = (),
    scope: Scope = "cluster",
) -> list[Line]:
    """One coverage line per need of `w` (module docstring); `spec` as filled from detection
    (the node size and the accelerator the hosts showed)."""
    return [
        *_network(w, spec, scopes, nodes, skipped, scope),
        *_storage(w, spec, io, skipped, scope),
        *_accelerator(w, spec, compute, skipped),
    ]
