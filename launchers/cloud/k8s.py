"""The acceptance job as Kubernetes documents (pure: a CloudJob in, dicts out).

- kind job (default): an Indexed batch/v1 Job and a headless Service; nothing but the core
  API and no sshd. The pod's completion index is its node rank, `<job>-0.<job>` (pod 0's
  host name under the Service) the rendezvous; every pod runs launchers/torchrun.sh.
- kind jobset: the same pods in a JobSet (jobset.x-k8s.io/v1alpha2), which makes the
  headless Service itself (`<job>-node-0-0.<job>`).
- kind mpijob: an MPIJob (kubeflow.org/v2beta1) for clusters with the MPI Operator: the
  launcher runs launchers/mpirun.sh over the operator's hostfile; workers run sshd.
Every pod: GPUs = its ranks, /dev/shm in memory, the job's deadline, the results volume,
a node-local volume for the local storage test (LOCAL_IO), a memory request = limit
computed from what it holds (launchers/cloud/podmemory.py). Only the pods that run ranks carry
ROLE_LABEL=node, which their required anti-affinity selects: the MPIJob launcher (no GPUs)
may share a node with a worker.
"""

from __future__ import annotations

from typing import Any

from launchers.cloud.cloudjob import (
    DATA_DIR,
    GPU_TAINT,
    INPUTS_DIR,
    LOCAL_DIR,
    TTL_AFTER_FINISHED_S,
    CloudJob,
    Platform,
    dump_yaml,
    node_env,
    node_script,
    stoker_args,
)
from launchers.cloud.fabrics import INSTANCE_TYPE_LABEL
from reports.shared.errors import UsageError

JOB_LABEL = "stoker.dev/job"
ROLE_LABEL = "stoker.dev/role"  # node: a pod that runs ranks (one per node); launcher: mpirun's
KUEUE_QUEUE = "kueue.x-k8s.io/queue-name"
KUEUE_TOPOLOGY = "kueue.x-k8s.io/podset-required-topology"
MULTUS = "k8s.v1.cni.cncf.io/networks"
MPI_HOSTFILE = "/etc/mpi/hostfile"  # where the MPI Operator mounts it in the launcher
# Exit codes on an Indexed Job. Node 0's are the verdict (launchers/torchrun.sh: 1 fail, 2 bad
# input, 3 incomplete); a worker's own non-zero exit is renumbered WORKER_FAILED, which no
# node 0 gives, so the podFailurePolicy tells the two apart: a worker that failed ends its own
# index, never the Job, and node 0 still reports (its report names what that worker left out).
VERDICT_EXITS = (1, 2, 3)
WORKER_FAILED = 10


def master_addr(job: CloudJob) -> str:
    if job.kind == "jobset":
        return f"{job.name}-node-0-0.{job.name}"
    if job.kind == "mpijob":
        return f"{job.name}-worker-0.{job.name}"
    return f"{job.name}-0.{job.name}"


def _meta(job: CloudJob, name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if job.namespace:
        meta["namespace"] = job.namespace
    meta["labels"] = {"app.kubernetes.io/name": "stoker", JOB_LABEL: job.name, **(labels or {})}
    return meta


def _env(pairs: list[tuple[str, str]]) -> list[dict[str, str]]:
    return [{"name": k, "value": v} for k, v in pairs]


def pod_resources(job: CloudJob, worker: bool) -> dict[str, Any]:
    limits: dict[str, Any] = {}
    if worker:
        if job.gpus_per_node:
            limits["nvidia.com/gpu"] = job.gpus_per_node
        limits.update(dict(job.devices))
        limits.update(dict(job.fab.resources))
        # CPU and memory requests = limits: Guaranteed QoS, so the topology manager can align
        # the pod's CPUs with its GPUs and NICs
        limits["cpu"] = job.cpus
        # shm + ranks + writers (podmemory): a limit below that is an OOM kill mid-run
        limits["memory"] = f"{job.memory.limit_gib}Gi"
    # extended resources and hugepages: requests must equal limits
    return {"limits": limits, "requests": dict(limits)} if limits else {}


def tolerations_of(job: CloudJob, worker: bool) -> list[dict[str, str]]:
    """The GPU pools' taint (nvidia.com/gpu) on pods that ask for GPUs, then --toleration's."""
    out = (
        [{"key": GPU_TAINT, "operator": "Exists", "effect": "NoSchedule"}]
        if worker and job.gpus_per_node
        else []
    )
    for key, value, effect in job.tolerations:
        t = {"key": key, "operator": "Equal", "value": value} if value else {"key": key, "operator": "Exists"}
        out.append({**t, "effect": effect} if effect else t)
    return out


def parse_toleration(text: str) -> tuple[str, str, str]:
    """--toleration KEY[=VALUE][:EFFECT] -> (key, value, effect); one line when bad."""
    rest, _, effect = text.rpartition(":") if ":" in text else (text, "", "")
    key, _, value = rest.partition("=")
    if (
        not key
        or effect not in ("", "NoSchedule", "PreferNoSchedule", "NoExecute")
        or any(c.isspace() for c in text)
    ):
        raise UsageError(
            f"--toleration {text!r}: use KEY[=VALUE][:EFFECT] with EFFECT NoSchedule, PreferNoSchedule "
            "or NoExecute, e.g. dedicated=gpu:NoSchedule"
        )
    return key, value, effect


def local_volume(spec: str | None) -> dict[str, Any]:
    """--local-volume as a pod volume: the node's own disk for the local storage test.
    hostpath:/DIR (a directory on the node, e.g. its NVMe), ephemeral:CLASS[:SIZE] (a generic
    ephemeral volume of a local storage class), none: an emptyDir (the kubelet's disk)."""
    if not spec:
        return {"emptyDir": {}}
    kind, _, rest = spec.partition(":")
    if kind == "hostpath" and rest.startswith("/"):
        return {"hostPath": {"path": rest, "type": "DirectoryOrCreate"}}
    cls, _, size = rest.partition(":")
    if kind == "ephemeral" and cls:
        claim = {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": cls,
            "resources": {"requests": {"storage": size or "500Gi"}},
        }
        return {"ephemeral": {"volumeClaimTemplate": {"spec": claim}}}
    raise UsageError(
        f"--local-volume {spec!r}: use hostpath:/DIR (the node's NVMe mount) or "
        "ephemeral:STORAGECLASS[:SIZE] (a local storage class)"
    )


def pod_dirs(out: str, stoker_dir: str) -> tuple[str, ...]:
    """The directories a pod mounts for itself or runs from (the results root, stoker's checkout):
    a spec path may not overlap one (launchers/spec_paths.py pod_storage)."""
    return ("/dev/shm", out, LOCAL_DIR, DATA_DIR, INPUTS_DIR, stoker_dir)


def spec_volume(path: str, pvc: str) -> dict[str, Any]:
    """A spec storage path as a pod volume: the PVC the spec names, else the node's own
    directory, which must exist (hostPath type Directory: the kubelet creates nothing, and a
    node without it does not start the pod; `kubectl describe pod` names the path)."""
    if pvc:
        return {"persistentVolumeClaim": {"claimName": pvc}}
    return {"hostPath": {"path": path, "type": "Directory"}}


def _volumes(job: CloudJob, worker: bool = True) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    mounts: list[dict[str, Any]] = [
        {"name": "dshm", "mountPath": "/dev/shm"},
        {"name": "results", "mountPath": job.out},
        {"name": "local", "mountPath": LOCAL_DIR},
    ]
    volumes: list[dict[str, Any]] = [
        # NCCL's shared-memory transport lives in /dev/shm; the container default is 64 MiB
        {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": f"{job.shm_gib}Gi"}},
        {
            "name": "results",
            **(
                {"persistentVolumeClaim": {"claimName": job.results_volume}}
                if job.results_volume
                else {"emptyDir": {}}
            ),
        },
        {"name": "local", **local_volume(job.local_volume)},
    ]
    if job.data_volume:  # the training data's PVC, where SHARED_IO lives (cloudjob.node_env)
        mounts.append({"name": "data", "mountPath": DATA_DIR})
        volumes.append({"name": "data", "persistentVolumeClaim": {"claimName": job.data_volume}})
    for i, (path, pvc) in enumerate(job.spec_mounts if worker else ()):  # only pods that run ranks
        mounts.append({"name": f"spec-storage-{i}", "mountPath": path})
        volumes.append({"name": f"spec-storage-{i}", **spec_volume(path, pvc)})
    if job.spec_text is not None or job.workload_text is not None:
        mounts.append({"name": "inputs", "mountPath": job.inputs_dir, "readOnly": True})
        volumes.append({"name": "inputs", "configMap": {"name": f"{job.name}-inputs"}})
    return mounts, volumes


def pod_template(
    job: CloudJob, command: list[str], env: list[tuple[str, str]], worker: bool = True
) -> dict[str, Any]:
    """A PodTemplateSpec (metadata + spec) of one node of the job."""
    fab = job.fab
    mounts, volumes = _volumes(job, worker)
    container: dict[str, Any] = {"name": "stoker", "image": job.image, "command": command, "env": _env(env)}
    resources = pod_resources(job, worker)
    if resources:
        container["resources"] = resources
    if worker and fab.capabilities:
        container["securityContext"] = {"capabilities": {"add": list(fab.capabilities)}}
    container["volumeMounts"] = mounts
    spec: dict[str, Any] = {"restartPolicy": "Never"}
    if worker and fab.host_network:
        spec.update(hostNetwork=True, dnsPolicy="ClusterFirstWithHostNet")
    if worker:
        # one pod per node: two pods on one node would be one node measured twice
        spec["affinity"] = {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": {JOB_LABEL: job.name, ROLE_LABEL: "node"}},
                        "topologyKey": "kubernetes.io/hostname",
                    }
                ]
            }
        }
    selector = dict(job.node_selector)
    if worker and job.instance_type:  # the EFA count is this type's: run only there
        selector.setdefault(INSTANCE_TYPE_LABEL, job.instance_type)
    if selector:
        spec["nodeSelector"] = selector
    tolerations = tolerations_of(job, worker)
    if tolerations:
        spec["tolerations"] = tolerations
    spec["containers"] = [container]
    spec["volumes"] = volumes
    annotations: dict[str, str] = {}
    if worker and fab.network_annotation:
        annotations[MULTUS] = ",".join(job.attachments)
    if worker and job.topology:
        annotations[KUEUE_TOPOLOGY] = job.topology
    role = "node" if worker else "launcher"
    meta: dict[str, Any] = {
        "labels": {"app.kubernetes.io/name": "stoker", JOB_LABEL: job.name, ROLE_LABEL: role}
    }
    if annotations:
        meta["annotations"] = annotations
    return {"metadata": meta, "spec": spec}


def _node_env(job: CloudJob) -> list[tuple[str, str]]:
    env = [
        ("NNODES", str(job.nodes)),
        ("MASTER_ADDR", master_addr(job)),
        ("NPROC_PER_NODE", str(job.ranks_per_node)),
        *node_env(job),
    ]
    # every pod has the local volume (an emptyDir without --local-volume): LOCAL_IO is on it,
    # unless the spec names a local path
    return env if job.local_volume or job.spec_local else [*env, ("LOCAL_IO", f"{LOCAL_DIR}/stoker-io")]


def indexed_node_script(job: CloudJob) -> str:
    """The bash of one pod of an Indexed Job: torchrun.sh as a child (SIGTERM passed on: bash
    as PID 1 has no default handler), then a worker's non-zero exit renumbered WORKER_FAILED
    (its own code in its log) and node 0's passed through: the Job's verdict is node 0's."""
    run = node_script(job, K8S.rank_env).splitlines()[1].removeprefix("exec ")
    return (
        f"export {K8S.rank_env}\n"
        f"{run} &\n"
        "pid=$!\ntrap 'kill -TERM \"$pid\" 2>/dev/null' TERM INT\n"
        'wait "$pid"; rc=$?\n'
        'while kill -0 "$pid" 2>/dev/null; do wait "$pid"; rc=$?; done\n'
        'if [ "$NODE_RANK" != 0 ] && [ "$rc" != 0 ]; then\n'
        "  echo \"stoker: node $NODE_RANK stopped with exit $rc; node 0's report judges the run "
        f'(this pod exits {WORKER_FAILED}: its index fails, the Job goes on)" >&2\n'
        f"  rc={WORKER_FAILED}\n"
        "fi\n"
        'exit "$rc"\n'
    )


def failure_policy() -> dict[str, Any]:
    """The podFailurePolicy of an Indexed Job, rules in the order Kubernetes tries them:
    node 0's verdict (its exit code) ends the Job at once, and the Job's Failed condition names
    the pod, so its index ("Container stoker for pod NS/<job>-0-<id> failed with exit code 1
    matching FailJob rule"); a worker that failed (WORKER_FAILED), a node taken away
    (DisruptionTarget: drained, preempted) or a container killed (128 + a signal) fails its
    own index, never retried (a retried pod would join a finished world)."""
    return {
        "rules": [
            {
                "action": "FailJob",
                "onExitCodes": {"containerName": "stoker", "operator": "In", "values": list(VERDICT_EXITS)},
            },
            {"action": "FailIndex", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
            {
                "action": "FailIndex",
                "onExitCodes": {"containerName": "stoker", "operator": "NotIn", "values": [0]},
            },
        ]
    }


def _indexed_job_spec(job: CloudJob) -> dict[str, Any]:
    template = pod_template(job, ["bash", "-c", indexed_node_script(job)], _node_env(job))
    if job.kind == "job":
        template["spec"] = {"subdomain": job.name, **template["spec"]}  # <job>-<i>.<job> resolves
    return {
        "completionMode": "Indexed",
        "completions": job.nodes,
        "parallelism": job.nodes,
        # a failed index is never retried, and fails that index only (failure_policy)
        "backoffLimitPerIndex": 0,
        "podFailurePolicy": failure_policy(),
        # node 0 done with exit 0 (its report passed) completes the Job at once, whatever a
        # worker did: the workers still running are stopped (Kubernetes >= 1.31)
        "successPolicy": {"rules": [{"succeededIndexes": "0"}]},
        "activeDeadlineSeconds": job.deadline_s,
        **({"ttlSecondsAfterFinished": TTL_AFTER_FINISHED_S} if job.kind == "job" else {}),
        "template": template,
    }


def _queue_labels(job: CloudJob) -> dict[str, str]:
    return {KUEUE_QUEUE: job.queue} if job.queue else {}


def inputs_configmap(job: CloudJob) -> dict[str, Any] | None:
    data = {
        n: t for n, t in (("spec.yaml", job.spec_text), ("workload.yaml", job.workload_text)) if t is not None
    }
    if not data:
        return None
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta(job, f"{job.name}-inputs"),
        "data": data,
    }


def indexed_job(job: CloudJob) -> list[dict[str, Any]]:
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(job, job.name),
        # headless, and published before the pods are ready: the rendezvous needs pod 0's name early
        "spec": {"clusterIP": "None", "publishNotReadyAddresses": True, "selector": {JOB_LABEL: job.name}},
    }
    batch = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": _meta(job, job.name, _queue_labels(job)),
        "spec": _indexed_job_spec(job),
    }
    return [service, batch]


def jobset(job: CloudJob) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "metadata": _meta(job, job.name, _queue_labels(job)),
            "spec": {
                "network": {"enableDNSHostnames": True, "subdomain": job.name},
                "failurePolicy": {"maxRestarts": 0},
                "ttlSecondsAfterFinished": TTL_AFTER_FINISHED_S,
                "replicatedJobs": [
                    {"name": "node", "replicas": 1, "template": {"spec": _indexed_job_spec(job)}}
                ],
            },
        }
    ]


def mpijob(job: CloudJob) -> list[dict[str, Any]]:
    # the ranks run on the workers, started by mpirun over ssh: sshd does not hand them the
    # pod's env, so mpirun.sh forwards every name in STOKER_RANK_ENV (-x); the workers'
    # own env carries the same values for anything else started there
    launcher_env = [("HOSTFILE", MPI_HOSTFILE), *_node_env(job)]
    run = ["bash", f"{job.stoker_dir}/launchers/mpirun.sh", *stoker_args(job)]
    return [
        {
            "apiVersion": "kubeflow.org/v2beta1",
            "kind": "MPIJob",
            "metadata": _meta(job, job.name, _queue_labels(job)),
            "spec": {
                "slotsPerWorker": job.ranks_per_node,
                "mpiImplementation": "OpenMPI",
                "runPolicy": {
                    "cleanPodPolicy": "Running",
                    "backoffLimit": 0,
                    "activeDeadlineSeconds": job.deadline_s,
                    "ttlSecondsAfterFinished": TTL_AFTER_FINISHED_S,
                },
                "mpiReplicaSpecs": {
                    "Launcher": {
                        "replicas": 1,
                        "restartPolicy": "Never",
                        "template": pod_template(job, run, launcher_env, worker=False),
                    },
                    "Worker": {
                        "replicas": job.nodes,
                        "restartPolicy": "Never",
                        "template": pod_template(job, ["/usr/sbin/sshd", "-De"], _node_env(job)),
                    },
                },
            },
        }
    ]


KINDS = {"job": indexed_job, "jobset": jobset, "mpijob": mpijob}


def documents(job: CloudJob) -> list[dict[str, Any]]:
    if job.kind == "check":  # `stoker check` on every node
        from launchers.cloud import k8s_check

        return k8s_check.documents(job)
    docs = KINDS[job.kind](job)
    cm = inputs_configmap(job)
    return ([cm] if cm else []) + docs


def _logs(job: CloudJob) -> str:
    if job.kind != "job":
        return "node 0's log"
    where = f" -n {job.namespace}" if job.namespace else ""
    return f"`kubectl logs{where} -l {JOB_LABEL}={job.name},batch.kubernetes.io/job-completion-index=0`"


K8S = Platform(
    name="k8s",
    client="kubectl",
    # an Indexed Job: the pod's index is its node rank; the world is the Job's completions
    rank_env='NODE_RANK="$JOB_COMPLETION_INDEX"',
    render=lambda job, accelerator: dump_yaml(documents(job)),
    apply=lambda client, job, path: [client, "apply", "-f", "-"],
    logs=_logs,
)
