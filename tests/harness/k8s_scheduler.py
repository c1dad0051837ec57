"""The scheduling constraints of rendered Kubernetes documents checked as kube-scheduler's
filter plugins would check them (pure; no API server: Debian ships only kubectl and etcd,
PyPI no kube-apiserver / kube-scheduler binaries, and nothing else can be fetched here).

Modelled, for the fields stoker writes: NodeResourcesFit (requests, defaulting to limits,
against a node's allocatable, summed over the pods already there), NodeAffinity's
nodeSelector, and InterPodAffinity's required podAntiAffinity in both directions (the
incoming pod's terms against the pods on the node, and theirs against it) over
kubernetes.io/hostname. Not modelled: taints, preemption, scoring (every feasible node is
tried), DRA, topology spread.

A gang is "schedulable" here only when EVERY arrival order and EVERY feasible choice ends
with all pods placed: the scheduler binds one pod at a time and never moves it, so one
reachable dead end is a job that can hang Pending until its deadline.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

HOSTNAME = "kubernetes.io/hostname"
GIB = 1 << 30
_SUFFIX = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": GIB, "Ti": 1 << 40, "K": 10**3, "M": 10**6, "G": 10**9}


def quantity(v: object) -> float:
    """A Kubernetes quantity ("43Gi", "5120Mi", "500m", 8) as a number (bytes, cores)."""
    s = str(v)
    if s.endswith("m"):
        return float(s[:-1]) / 1000
    for suf, mul in _SUFFIX.items():
        if s.endswith(suf):
            return float(s[: -len(suf)]) * mul
    return float(s)


@dataclass(frozen=True, kw_only=True, slots=True)
class Pod:
    name: str
    labels: dict[str, str]
    requests: dict[str, float]
    node_selector: dict[str, str]
    anti: tuple[dict[str, str], ...]  # required anti-affinity matchLabels over the hostname
    env: dict[str, str] = field(default_factory=dict)
    command: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True, slots=True)
class Node:
    name: str
    labels: dict[str, str]
    allocatable: dict[str, float]


def _requests(container: dict[str, Any]) -> dict[str, float]:
    res = container.get("resources", {})
    merged = {**res.get("limits", {}), **res.get("requests", {})}  # a limit alone is the request
    return {k: quantity(v) for k, v in merged.items()}


def pod_from_template(name: str, template: dict[str, Any]) -> Pod:
    spec = template["spec"]
    requests: dict[str, float] = {}
    for c in spec["containers"]:
        for k, v in _requests(c).items():
            requests[k] = requests.get(k, 0) + v
    terms = (
        spec.get("affinity", {})
        .get("podAntiAffinity", {})
        .get("requiredDuringSchedulingIgnoredDuringExecution", [])
    )
    assert all(t["topologyKey"] == HOSTNAME for t in terms), terms  # the only key modelled
    c0 = spec["containers"][0]
    return Pod(
        name=name,
        labels=dict(template.get("metadata", {}).get("labels", {})),
        requests=requests,
        node_selector=dict(spec.get("nodeSelector", {})),
        anti=tuple(dict(t["labelSelector"]["matchLabels"]) for t in terms),
        env={e["name"]: e["value"] for e in c0.get("env", [])},
        command=tuple(c0.get("command", [])),
    )


def pods_of(docs: Iterable[dict[str, Any]]) -> list[Pod]:
    """The pods the controllers would create for each workload document."""
    pods: list[Pod] = []
    for d in docs:
        kind, name = d["kind"], d["metadata"]["name"]
        if kind == "Job":
            pods += [
                pod_from_template(f"{name}-{i}", d["spec"]["template"])
                for i in range(d["spec"]["completions"])
            ]
        elif kind == "JobSet":
            for rj in d["spec"]["replicatedJobs"]:
                job = rj["template"]["spec"]
                for r in range(rj["replicas"]):
                    pods += [
                        pod_from_template(f"{name}-{rj['name']}-{r}-{i}", job["template"])
                        for i in range(job["completions"])
                    ]
        elif kind == "MPIJob":
            for role, rs in d["spec"]["mpiReplicaSpecs"].items():
                pods += [
                    pod_from_template(f"{name}-{role.lower()}-{i}", rs["template"])
                    for i in range(rs["replicas"])
                ]
    return pods


def _matches(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def why_not(pod: Pod, node: Node, there: list[Pod]) -> str | None:
    """None when `pod` may be bound to `node` holding `there`; else the filter that refuses."""
    if not _matches(pod.node_selector, node.labels):
        return f"nodeSelector {pod.node_selector} does not match node {node.name}"
    for res, want in pod.requests.items():
        used = sum(p.requests.get(res, 0) for p in there)
        have = node.allocatable.get(res, 0)
        if used + want > have:
            return f"{res}: {want:g} requested, {have - used:g} of {have:g} free on {node.name}"
    for p in there:
        if any(_matches(sel, p.labels) for sel in pod.anti):
            return f"{pod.name}'s anti-affinity selects {p.name} on {node.name}"
        if any(_matches(sel, pod.labels) for sel in p.anti):
            return f"{p.name}'s anti-affinity on {node.name} selects {pod.name}"
    return None


def dead_end(pods: list[Pod], nodes: list[Node]) -> str | None:
    """None when every arrival order and every feasible choice places every pod; else a
    description of one reachable state where a pod fits on no node."""
    seen: set[tuple[tuple[str, str], ...]] = set()

    def walk(placed: dict[str, str]) -> str | None:
        key = tuple(sorted(placed.items()))
        if key in seen:
            return None
        seen.add(key)
        by_name = {p.name: p for p in pods}
        for pod in pods:
            if pod.name in placed:
                continue
            options = []
            reasons = []
            for node in nodes:
                there = [by_name[n] for n, where in placed.items() if where == node.name]
                reason = why_not(pod, node, there)
                (reasons if reason else options).append(reason or node.name)
            if not options:
                where = ", ".join(f"{n} on {w}" for n, w in placed.items()) or "nothing placed"
                return f"{pod.name} fits no node after {where}: " + "; ".join(reasons)
            for node_name in options:
                found = walk({**placed, pod.name: node_name})
                if found:
                    return found
        return None

    return walk({})


# Real instance shapes: capacity from the sources named per row; allocatable taken as
# capacity less 2 CPUs and 8 GiB for the kubelet and system (more than EKS reserves).
def _node(name: str, labels: dict[str, str], cpu: int, mem_gib: int) -> Node:
    alloc = {"cpu": float(cpu - 2), "memory": float((mem_gib - 8) * GIB)}
    return Node(name=name, labels={HOSTNAME: name, **labels}, allocatable=alloc)


def shape(kind: str, name: str) -> Node:
    """One node of an instance shape (the table: SHAPES)."""
    return SHAPES[kind](name)


HUGE_2M = 10 * GIB  # hugepages-2Mi a node with the EFA installer's huge pages offers (assumed)
SHAPES = {
    # torchx named_resources_aws (meta-pytorch/torchx): cpu 192, 8 GPUs, 2048 GiB, 32 EFA
    "p5.48xlarge": lambda n: _with(
        _node(n, {"node.kubernetes.io/instance-type": "p5.48xlarge"}, 192, 2048),
        {"nvidia.com/gpu": 8, "vpc.amazonaws.com/efa": 32, "hugepages-2Mi": HUGE_2M},
    ),
    # torchx PR 995: p5en.48xlarge cpu 192, 8 GPUs, 2048 GiB, 16 EFA
    "p5en.48xlarge": lambda n: _with(
        _node(n, {"node.kubernetes.io/instance-type": "p5en.48xlarge"}, 192, 2048),
        {"nvidia.com/gpu": 8, "vpc.amazonaws.com/efa": 16, "hugepages-2Mi": HUGE_2M},
    ),
    # torchx: p4d.24xlarge cpu 96, 8 GPUs, 1152 GiB, 4 EFA
    "p4d.24xlarge": lambda n: _with(
        _node(n, {"node.kubernetes.io/instance-type": "p4d.24xlarge"}, 96, 1152),
        {"nvidia.com/gpu": 8, "vpc.amazonaws.com/efa": 4, "hugepages-2Mi": HUGE_2M},
    ),
    # an 8x H100 InfiniBand node as the NVIDIA Network Operator advertises it (an operator's
    # `kubectl describe node` in a public how-to: rdma/rdma_shared_device_a 64, nvidia.com/
    # hostdev 8); rdma/ib 1 and the CPU/memory figures are hand-written (an HGX H100 host)
    "ib-h100-8x": lambda n: _with(
        _node(n, {"node.kubernetes.io/instance-type": "ib-h100-8x"}, 128, 2048),
        {
            "nvidia.com/gpu": 8,
            "rdma/ib": 1,
            "rdma/rdma_shared_device_a": 64,
            "nvidia.com/hostdev": 8,
            "nvidia.com/sriov_rdma_vf": 8,
        },
    ),
}


def _with(node: Node, extended: dict[str, float]) -> Node:
    return Node(name=node.name, labels=node.labels, allocatable={**node.allocatable, **extended})
