"""A real sharded checkpoint across namespaced nodes (tests/harness/netns.py), each node's
processes throttled on its storage (tests/harness/blockdev.py), against the model's save time
(reports/judging/storage/ckpt_save.py) from `stoker io` run on the same nodes and devices first.

A node is a network namespace with its own throttled device (node-local storage); one more
device is written by every node (shared storage). Every process of the bed (stoker io and its
fio and save children, the job's ranks) is started in the blkio cgroup that throttles the
devices, so a node's writers share its device's rate as they share a real node's disk, and
all nodes share the shared device's. Root only.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

from reports.judging.workload.workload import Checkpoint, Workload
from reports.table.read import RecordSet, read_records
from tests.harness.blockdev import set_rate, start_in_cgroup, throttled_disk
from tests.harness.netns import NetnsCluster
from tests.unit.recordgen import judge_records
from tests.validation import bed

STORAGE = ("node-local", "shared")  # the places every node writes to, in this order


@dataclass(frozen=True, kw_only=True, slots=True)
class Node:
    """Where node i writes (a path per STORAGE) and the cgroup its processes run in."""

    paths: tuple[Path, ...]
    procs: Path


@contextlib.contextmanager
def disks(rate: int, nodes: int, size: str = "1G", shared_size: str = "2G") -> Iterator[list[Node]]:
    """A throttled loop device per node (its local disk) and one written by all nodes (shared
    storage), each at `rate` bytes/s. Every process runs in one blkio cgroup holding a limit
    per device: a limit is per (cgroup, device), so a node's device is shared by that node's
    writers alone and the shared device by every node's."""
    with contextlib.ExitStack() as stack:
        local = [stack.enter_context(throttled_disk(rate, size, name=f"svx{i}")) for i in range(nodes)]
        common = stack.enter_context(throttled_disk(rate, shared_size, name="svxs"))
        for d in local:
            set_rate(replace(d, cgroup_procs=common.cgroup_procs), rate)
        yield [Node(paths=(d.mount, common.mount), procs=common.cgroup_procs) for d in local]


def run_in_cgroups(
    c: NetnsCluster, jobs: Sequence[tuple[int, list[str], dict[str, str], Path]], timeout: float
) -> list[tuple[int, str, str]]:
    """Every (node, argv, env, cgroup.procs) job at once in its node's namespace, started in
    that cgroup (joined before `ip netns exec`, whose fresh /sys hides the cgroup tree);
    NetnsCluster.run_all; (returncode, stdout, stderr) per job."""
    return c.run_all(
        [(i, argv, env) for i, argv, env, _ in jobs],
        timeout,
        preexec=[partial(start_in_cgroup, cg) for *_, cg in jobs],
    )


def _contract(c: NetnsCluster, rank: int, world: int, local: int, nproc: int, port: int) -> dict[str, str]:
    return {
        "RANK": str(rank),
        "WORLD_SIZE": str(world),
        "LOCAL_RANK": str(local),
        "LOCAL_WORLD_SIZE": str(nproc),
        "MASTER_ADDR": c.addr(0),
        "MASTER_PORT": str(port),
    }


def _check(what: str, results: Sequence[tuple[int, str, str]]) -> None:
    for rc, out, err in results:
        if rc != 0:
            raise RuntimeError(f"{what}: rc {rc}\n{out[-2000:]}\n{err[-2000:]}")


def stoker_io(
    c: NetnsCluster, nodes: Sequence[Node], out: Path, port: int, ckpt_bytes: int, writers: int
) -> RecordSet:
    """`stoker io --workloads checkpoint` on every node's paths, one task per node, as on a real
    cluster: fio, then torch.save and DCP saved by one process per node and by `writers` per
    node at once, twice each. The records name rank 0's paths."""
    args = ["--workloads", "checkpoint", "--ckpt-bytes", str(ckpt_bytes), "--writers", str(writers)]
    # 2 saves per torch figure, not stoker io's 3: still repeated, and a third save of each of
    # the 8 figures would cost ~60 s more of the bed's (alone) time on the 30 MiB/s devices
    args += ["--runtime", "3", "--save-repeats", "2", "--out", str(out)]
    world = len(nodes)
    jobs = [
        (
            i,
            [*bed.STOKER, "io", *(x for p in n.paths for x in ("--path", str(p))), *args],
            c.env(i, {**bed.ENV, **_contract(c, i, world, 0, 1, port)}),
            n.procs,
        )
        for i, n in enumerate(nodes)
    ]
    _check("stoker io", run_in_cgroups(c, jobs, timeout=300))
    return read_records(out)


@dataclass(frozen=True, kw_only=True, slots=True)
class Save:
    storage: str  # a STORAGE
    backend: str
    repeat: int
    seconds: float  # the slowest rank's, barrier to barrier
    nbytes: int  # every rank's


def real_saves(
    c: NetnsCluster, nodes: Sequence[Node], nproc: int, port: int, repeats: int, depth: int
) -> list[Save]:
    """`nproc` ranks on each node, one gloo process group over the namespaced link, each rank
    saving its shard to its node's paths in turn, `repeats` times with torch.save and DCP."""
    world = len(nodes) * nproc
    argv = [bed.PY, "-m", "tests.validation.sharded_nodes_worker", "--repeats", str(repeats)]
    argv += ["--depth", str(depth)]
    jobs = [
        (
            i,
            [*argv, *(x for p in n.paths for x in ("--dir", str(p / "validate-sharded-nodes")))],
            c.env(i, {**bed.ENV, **_contract(c, i * nproc + k, world, k, nproc, port)}),
            n.procs,
        )
        for i, n in enumerate(nodes)
        for k in range(nproc)
    ]
    results = run_in_cgroups(c, jobs, timeout=300)
    _check("sharded_nodes_worker", results)
    ranks = [json.loads(out.strip().splitlines()[-1])["saves"] for _, out, _ in results]
    return [
        Save(
            storage=STORAGE[[str(p / "validate-sharded-nodes") for p in nodes[0].paths].index(s["dir"])],
            backend=s["backend"],
            repeat=s["repeat"],
            seconds=max(r[j]["seconds"] for r in ranks),
            nbytes=sum(r[j]["bytes"] for r in ranks),
        )
        for j, s in enumerate(ranks[0])
    ]


def predict(
    records: RecordSet, path: Path, nbytes: int, fmt: str, nodes: int, nproc: int
) -> tuple[float, dict]:
    """(the model's save time for `nbytes` saved by every rank of `nodes` x `nproc`, the
    checkpoint row's extra: its note and terms)."""
    w = Workload(
        name="validate-sharded-nodes",
        params=nbytes / bed.CKPT_BYTES_PER_PARAM,
        gpus=nodes * nproc,
        gpus_per_node=nproc,
        data="fsdp",
        checkpoint=Checkpoint(
            interval_minutes=60, bytes_per_param=bed.CKPT_BYTES_PER_PARAM, path=str(path), format=fmt
        ),
    )
    (row,) = [r for r in judge_records(records, None, w).model if r.check.startswith("checkpoint")]
    return row.extra["write_s"], row.extra
