"""The acceptance job as a SkyPilot task and as a dstack task (pure: a CloudJob in, one
YAML document's dict out). Both run the same node script as the Kubernetes pods
(launchers/cloud/cloudjob.py), with the platform's own rank variables."""

from __future__ import annotations

from typing import Any

from launchers.cloud.cloudjob import LOCAL_DIR, CloudJob, Platform, dump_yaml, node_env, node_script
from launchers.cloud.k8s import local_volume, pod_resources


def _inputs(job: CloudJob) -> list[tuple[str, str]]:
    """(local file, path in the container) of the spec and workload."""
    return [
        (local, f"{job.inputs_dir}/{name}")
        for local, name in ((job.spec_path, "spec.yaml"), (job.workload_path, "workload.yaml"))
        if local
    ]


def _gpus(job: CloudJob, accelerator: str) -> str:
    return f"{accelerator}:{job.gpus_per_node}"


def skypilot(job: CloudJob, accelerator: str = "H100") -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if job.gpus_per_node:
        resources["accelerators"] = _gpus(job, accelerator)
    resources["image_id"] = f"docker:{job.image}"
    if job.instance_type:
        resources["instance_type"] = job.instance_type
    if job.network_tier or job.fab.skypilot_tier:  # efa/ib: without it no fabric is attached
        resources["network_tier"] = job.network_tier or job.fab.skypilot_tier
    task: dict[str, Any] = {
        "name": job.name,
        "num_nodes": job.nodes,
        "resources": resources,
        "envs": dict(node_env(job)),
    }
    if _inputs(job):
        task["file_mounts"] = {remote: local for local, remote in _inputs(job)}
    if job.results_volume:
        task["volumes"] = {job.out: job.results_volume}
    fab = job.fab
    # on Kubernetes, the fabric's devices, capabilities and networks go in through pod_config
    container: dict[str, Any] = {}
    res = pod_resources(job, worker=True)
    res.get("limits", {}).pop("nvidia.com/gpu", None)  # SkyPilot asks for the GPUs itself
    res.get("requests", {}).pop("nvidia.com/gpu", None)
    for part in res.values():  # SkyPilot sizes the pod's memory and CPUs itself: resources.memory, .cpus
        part.pop("memory", None)
        part.pop("cpu", None)
    resources["memory"] = f"{job.memory.limit_gib}+"
    resources["cpus"] = f"{job.cpus}+"
    if res.get("limits"):
        container["resources"] = res
    if fab.capabilities:
        container["securityContext"] = {"capabilities": {"add": list(fab.capabilities)}}
    pod: dict[str, Any] = {}
    if fab.network_annotation:
        pod["metadata"] = {"annotations": {"k8s.v1.cni.cncf.io/networks": ",".join(job.attachments)}}
    if container:
        pod["spec"] = {"containers": [container]}
    if fab.host_network:
        pod.setdefault("spec", {}).update(hostNetwork=True, dnsPolicy="ClusterFirstWithHostNet")
    if job.local_volume:  # on Kubernetes: the node's disk, as the k8s job's (k8s.local_volume)
        container["volumeMounts"] = [{"name": "local", "mountPath": LOCAL_DIR}]
        spec = pod.setdefault("spec", {})
        spec["containers"] = [container]
        spec["volumes"] = [{"name": "local", **local_volume(job.local_volume)}]
    if pod:
        task["config"] = {"kubernetes": {"pod_config": pod}}
    task["run"] = node_script(job, SKYPILOT.rank_env)
    return task


def dstack(job: CloudJob, accelerator: str = "H100") -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if job.gpus_per_node:
        resources["gpu"] = _gpus(job, accelerator)
    resources["shm_size"] = f"{job.shm_gib}GB"
    resources["memory"] = f"{job.memory.limit_gib}GB.."  # shm + ranks + writers (podmemory)
    task: dict[str, Any] = {
        "type": "task",
        "name": job.name,
        "nodes": job.nodes,
        # the workers wait for the master's rendezvous; the master's exit is the verdict
        "startup_order": "workers-first",
        "stop_criteria": "master-done",
        "image": job.image,
        "env": [f"{k}={v}" for k, v in node_env(job)],
    }
    if _inputs(job):
        task["files"] = [f"{local}:{remote}" for local, remote in _inputs(job)]
    volumes: list[Any] = [{"name": job.results_volume, "path": job.out}] if job.results_volume else []
    if job.local_volume:  # an instance volume: the host's own disk (checked in submit_cloud)
        volumes.append({"instance_path": job.local_volume.partition(":")[2], "path": LOCAL_DIR})
    if volumes:
        task["volumes"] = volumes
    task["resources"] = resources
    task["commands"] = node_script(job, DSTACK.rank_env).splitlines()
    return task


SKYPILOT = Platform(
    name="skypilot",
    client="sky",
    rank_env='NNODES="$SKYPILOT_NUM_NODES" NODE_RANK="$SKYPILOT_NODE_RANK" '
    'MASTER_ADDR="$(printf \'%s\\n\' "$SKYPILOT_NODE_IPS" | head -n 1)" '
    'NPROC_PER_NODE="$SKYPILOT_NUM_GPUS_PER_NODE"',
    render=lambda job, accelerator: dump_yaml([skypilot(job, accelerator)]),
    apply=lambda client, job, path: [client, "launch", "--yes", "--cluster", job.name, path],
    logs=lambda job: "node 0's log",
)
DSTACK = Platform(
    name="dstack",
    client="dstack",
    rank_env='NNODES="$DSTACK_NODES_NUM" NODE_RANK="$DSTACK_NODE_RANK" '
    'MASTER_ADDR="$DSTACK_MASTER_NODE_IP" NPROC_PER_NODE="$DSTACK_GPUS_PER_NODE"',
    render=lambda job, accelerator: dump_yaml([dstack(job, accelerator)]),
    apply=lambda client, job, path: [client, "apply", "--yes", "-f", path],
    logs=lambda job: "node 0's log",
)
