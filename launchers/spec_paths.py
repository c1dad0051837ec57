"""Where a submitted job tests storage, from the spec's `storage:` promises: each promise is
measured on its own path (a local one on every node's own disk at that path, a shared one
from all nodes at once), `--local-path` / `--shared-path` add to them or stand in for a
missing kind, and every promise the job cannot measure is named before anything is
submitted. Pure: the spec is read at the edge (launchers/slurm/submit.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from reports.shared.spec import Spec, StorageSpec


@dataclass(frozen=True, kw_only=True, slots=True)
class StoragePlan:
    local: str | None  # the job's LOCAL_IO (None: its own per-node temp dir)
    shared: str | None  # the job's SHARED_IO (None: a scratch dir in the results dir)
    more_local: tuple[str, ...] = ()  # further promises, measured in the same phase
    more_shared: tuple[str, ...] = ()
    local_GBps: float | None = None  # the first local promise's write rate, per node
    shared_GBps: float | None = None  # the first shared promise's, the whole file system


def _write_rate(entries: Sequence[StorageSpec], kind: str) -> float | None:
    return next((e.write_GBps for e in entries if e.kind == kind and e.write_GBps), None)


def _paths(entries: Sequence[StorageSpec], kind: str) -> list[str]:
    """The kind's promised paths, in the spec's order; a relative one cannot be measured (unmeasurable)."""
    return list(dict.fromkeys(e.path for e in entries if e.kind == kind and e.path.startswith("/")))


def storage_plan(entries: Sequence[StorageSpec], local: str | None, shared: str | None) -> StoragePlan:
    """The paths the job measures: every promise's own, and the options' beside them."""
    locals_, shareds = _paths(entries, "local"), _paths(entries, "shared")
    local_all = [*([local] if local else []), *(p for p in locals_ if p != local)]
    shared_all = [*([shared] if shared else []), *(p for p in shareds if p != shared)]
    return StoragePlan(
        local=local_all[0] if local_all else None,
        shared=shared_all[0] if shared_all else None,
        more_local=tuple(local_all[1:]),
        more_shared=tuple(shared_all[1:]),
        local_GBps=_write_rate(entries, "local"),
        shared_GBps=_write_rate(entries, "shared"),
    )


def here(
    entries: Sequence[StorageSpec], problem: Callable[[str], str]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """`stoker run --spec` on one machine: the spec's storage paths it measures here (in the spec's
    order, each once) and one line for each it does not. `problem` (the edge's look at the path)
    says why a path cannot be measured here, "" when it can; stoker creates no spec path."""
    measured: list[str] = []
    lines: list[str] = []
    for e in entries:
        why = (
            problem(e.path)
            if e.path.startswith("/")
            else "not an absolute path: give it as the nodes mount it"
        )
        if why:
            lines.append(f"the spec's {e.kind} storage {e.path} is not measured: {why}")
        elif e.path not in measured:
            measured.append(e.path)
    return tuple(measured), tuple(lines)


def unmeasurable(spec: Spec, *, nodes: int, gpus_per_node: int) -> list[str]:
    """The spec's promises this job cannot measure, one phrase each."""
    out = [
        f"storage {e.path} (not an absolute path: give it as the nodes mount it)"
        for e in spec.storage
        if not e.path.startswith("/")
    ]
    if spec.gpus_per_node and gpus_per_node != spec.gpus_per_node:
        out.append(
            f"{spec.gpus_per_node} GPUs per node (the job asks for {gpus_per_node}: "
            f"--gpus-per-node {spec.gpus_per_node})"
        )
    if nodes < 2 and spec.inter_node_GBps:
        out.append("the inter-node network (one node has none to measure: --nodes 2 or more)")
    if nodes < 2 and any(e.kind == "shared" for e in spec.storage):
        out.append("shared storage at scale (one node reads and writes it alone)")
    return out


def warning(spec: Spec, *, nodes: int, gpus_per_node: int) -> str | None:
    """One line naming every promise the job cannot measure, or None."""
    what = unmeasurable(spec, nodes=nodes, gpus_per_node=gpus_per_node)
    if not what:
        return None
    return f"warning: this job cannot measure the spec's {'; '.join(what)}"
