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


# the image's own directories: a spec path mounted over one would hide what the pod runs
IMAGE_DIRS = (
    "/",
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/lib",
    "/lib64",
    "/proc",
    "/run",
    "/sbin",
    "/sys",
    "/usr",
    "/var",
)


@dataclass(frozen=True, kw_only=True, slots=True)
class PodStorage:
    """Where a Kubernetes job's pods test storage: each spec path the job measures is mounted
    at its own path (its `pvc`, else the node's directory as a hostPath that must exist)."""

    local: str | None  # LOCAL_IO: the spec's local path (None: the job's own volume)
    shared: str | None  # SHARED_IO: the spec's shared path (None: the data or results volume)
    mounts: tuple[StorageSpec, ...]  # the spec entries mounted into the pods
    refused: tuple[str, ...]  # one phrase per spec path the pods cannot measure


def _overlaps(path: str, other: str) -> bool:
    a, b = path.rstrip("/") + "/", other.rstrip("/") + "/"
    return a.startswith(b) or b.startswith(a)


def pod_storage(
    entries: Sequence[StorageSpec], *, local: str | None, shared: str | None, pod_dirs: Sequence[str]
) -> PodStorage:
    """The spec's storage for a pod (pure): one local and one shared path are measured (LOCAL_IO,
    SHARED_IO; `local` / `shared` are the job's own options, which come first), each mounted at
    its own path; a path that is not absolute, is one of the image's directories or overlaps
    the pod's own mounts (`pod_dirs`), or is a second path of its kind, is refused by name."""
    refused: list[str] = []
    fit: list[StorageSpec] = []
    for e in entries:
        clash = next((d for d in pod_dirs if _overlaps(e.path, d)), None)
        if not e.path.startswith("/"):
            refused.append(f"{e.kind} storage {e.path} (not an absolute path: give it as the nodes mount it)")
        elif e.path.rstrip("/") in IMAGE_DIRS or e.path == "/":
            refused.append(
                f"{e.kind} storage {e.path} (mounted there it would hide the image's own {e.path})"
            )
        elif clash:
            refused.append(f"{e.kind} storage {e.path} (it overlaps the pod's own mount {clash})")
        else:
            fit.append(e)
    plan = storage_plan(fit, local, shared)
    for kind, first, more in (
        ("local", plan.local, plan.more_local),
        ("shared", plan.shared, plan.more_shared),
    ):
        refused += [
            f"{kind} storage {p} (the pods measure one {kind} path, {first}; a second runs on Slurm: "
            "stoker submit --platform slurm)"
            for p in more
        ]
    chosen = {plan.local, plan.shared}
    mounts = tuple({e.path: e for e in fit if e.path in chosen}.values())
    return PodStorage(
        local=plan.local if plan.local != local else None,
        shared=plan.shared if plan.shared != shared else None,
        mounts=mounts,
        refused=tuple(refused),
    )
