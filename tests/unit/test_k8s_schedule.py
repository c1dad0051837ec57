"""Validation beyond schemas: every rendered Kubernetes job placed on nodes of real instance
shapes as kube-scheduler's filters would place it (tests/harness/k8s_scheduler.py: requests
vs allocatable, nodeSelector, required anti-affinity both ways, every arrival order), and
the environment each container that runs ranks gets. An MPIJob whose launcher carries
the label the workers' anti-affinity selects (as stoker's once did) dead-ends on
two GPU nodes here; the one rendered now schedules."""

from __future__ import annotations

from dataclasses import replace

import pytest
import yaml

from launchers.cloud.cloudjob import CloudJob
from launchers.cloud.fabrics import FABRICS
from launchers.cloud.submit_cloud import render
from tests.conftest import DATA
from tests.harness.k8s_scheduler import GIB, Node, dead_end, pods_of, quantity, shape, why_not
from tests.unit.test_cloud_render import CASES, base_job

# the shape each fabric's job is meant for (EFA: its default instance type, p5.48xlarge)
SHAPE = {"ib": "ib-h100-8x", "efa": "p5.48xlarge", "roce": "ib-h100-8x", "tcp": "ib-h100-8x"}


def k8s_docs(job: CloudJob) -> list[dict]:
    return list(yaml.safe_load_all(render(job, "k8s")))


def nodes(kind: str, n: int) -> list[Node]:
    return [shape(kind, f"gpu-{i}") for i in range(n)]


@pytest.mark.parametrize("name", sorted(n for n, (p, _) in CASES.items() if p == "k8s"))
def test_every_rendered_k8s_job_schedules_on_exactly_its_nodes(name: str) -> None:
    _, job = CASES[name]
    pods = pods_of(k8s_docs(job))
    # no more nodes than the job asks for: an MPIJob launcher must fit beside a worker
    where = nodes(SHAPE[job.fabric], job.nodes)
    if job.node_selector:
        where = [
            Node(name=x.name, labels={**x.labels, **dict(job.node_selector)}, allocatable=x.allocatable)
            for x in where
        ]
    assert dead_end(pods, where) is None


def test_mpijob_schedules_on_two_gpu_nodes_and_the_old_one_deadlocked() -> None:
    for fabric in FABRICS:
        pods = pods_of(k8s_docs(base_job(fabric, "mpijob")))
        assert [p.name.rsplit("-", 2)[-2] for p in pods] == ["launcher", "worker", "worker"]
        assert dead_end(pods, nodes(SHAPE[fabric], 2)) is None, fabric
    old = list(
        yaml.safe_load_all((DATA / "launchers/cloud/regress/k8s-mpijob-efa-before-issue24.yaml").read_text())
    )
    why = dead_end(pods_of(old), nodes("p5.48xlarge", 2))
    assert why is not None and "anti-affinity" in why, why
    print(f"\nthe old MPIJob: {why}")


def test_two_pods_never_share_a_node() -> None:
    pods = pods_of(k8s_docs(base_job("ib")))
    assert why_not(pods[1], shape("ib-h100-8x", "a"), [pods[0]]) is not None  # GPUs and anti-affinity
    one = nodes("ib-h100-8x", 1)
    assert dead_end(pods, one) is not None  # 2 nodes asked, 1 there: Pending, never half a world


@pytest.mark.parametrize(
    "instance_type,count",
    [("p5.48xlarge", 32), ("p5e.48xlarge", 32), ("p5en.48xlarge", 16), ("p4d.24xlarge", 4)],
)
def test_efa_count_is_the_instance_types_and_fits_it(instance_type: str, count: int) -> None:
    job = replace(base_job("efa"), instance_type=instance_type)
    pods = pods_of(k8s_docs(job))
    assert pods[0].requests["vpc.amazonaws.com/efa"] == count
    assert pods[0].node_selector == {"node.kubernetes.io/instance-type": instance_type}
    kind = (
        instance_type if instance_type in ("p5.48xlarge", "p5en.48xlarge", "p4d.24xlarge") else "p5.48xlarge"
    )
    where = [
        Node(
            name=x.name,
            labels={**x.labels, "node.kubernetes.io/instance-type": instance_type},
            allocatable=x.allocatable,
        )
        for x in nodes(kind, 2)
    ]
    assert dead_end(pods, where) is None
    # what the issue saw: 32 EFA asked on a p5en (16) stays Pending
    if instance_type == "p5en.48xlarge":
        p5_pods = pods_of(k8s_docs(base_job("efa")))
        assert "vpc.amazonaws.com/efa: 32 requested, 16" in str(dead_end(p5_pods, nodes("p5en.48xlarge", 2)))


def test_fabric_resource_override_renders_and_schedules() -> None:
    job = replace(base_job("ib"), fabric_resources=(("rdma/shared_ib", 1),))
    pods = pods_of(k8s_docs(job))
    assert "rdma/ib" not in pods[0].requests and pods[0].requests["rdma/shared_ib"] == 1
    plain = nodes("ib-h100-8x", 2)
    assert "rdma/shared_ib" in str(dead_end(pods, plain))  # a node without that plugin: Pending
    shared = [
        Node(name=x.name, labels=x.labels, allocatable={**x.allocatable, "rdma/shared_ib": 1000})
        for x in plain
    ]
    assert dead_end(pods, shared) is None


@pytest.mark.parametrize("fabric", sorted(FABRICS))
@pytest.mark.parametrize("kind", ["job", "jobset", "mpijob"])
def test_the_fabric_env_reaches_the_containers_that_run_ranks(fabric: str, kind: str) -> None:
    docs = k8s_docs(base_job(fabric, kind))
    pods = pods_of(docs)
    want = dict(FABRICS[fabric].env)
    for p in pods:
        assert want.items() <= p.env.items(), (p.name, p.env)
    if kind == "mpijob":  # the ranks are mpirun's children over ssh: -x carries the names
        launcher = next(p for p in pods if "launcher" in p.name)
        assert "mpirun.sh" in launcher.command[1]
        assert set(launcher.env["STOKER_RANK_ENV"].split(",")) == set(want)


def test_the_memory_limit_covers_shm_ranks_and_writers() -> None:
    """The arithmetic, by hand, for 8 GPU ranks at the standard profile (4 GiB shards)."""
    from launchers.profiles import get_profile

    job = replace(base_job("efa"), profile=get_profile("standard"))
    m = job.memory
    parts = m.parts()
    assert parts["shm"] == 16 * GIB  # 2 GiB x 8 ranks, the memory-backed /dev/shm
    assert parts["ranks"] == 8 * 3 * GIB  # a CUDA rank's host memory allowance x 8
    assert parts["writers"] == 8 * (16 << 20) + 2 * 4 * GIB  # 8 fio writers + torch.save's 2 copies
    assert parts["base"] == 2 * GIB
    total = 16 * GIB + 24 * GIB + (128 << 20) + 8 * GIB + 2 * GIB  # 50.125 GiB
    assert m.limit_gib == 51 and m.limit_gib * GIB >= total
    pod = pods_of(k8s_docs(job))[0]
    assert pod.requests["memory"] == quantity("51Gi") >= total  # was 32Gi: OOM at ~50 GiB
    assert pod.requests["hugepages-2Mi"] == 5120 * (1 << 20)  # huge pages are their own resource
    assert dead_end(pods_of(k8s_docs(job)), nodes("p5.48xlarge", 2)) is None
