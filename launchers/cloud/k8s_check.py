"""`stoker submit --platform k8s --kind check`: `stoker check` on every node, as Kubernetes
documents (pure: a CloudJob in, dicts out). docs/check.md.

A DaemonSet runs the check in a loop (every CHECK_EVERY_S) on each node it selects, with
`--k8s-node $(NODE_NAME)` (the downward API) so a failing node is tainted
`stoker.dev/unhealthy=<check>:NoSchedule` and labelled, and a passing one untainted; it
tolerates its own taint, or it could never clear it. It requests no GPU (a request would hold
the node's GPUs from the jobs it guards): the NVIDIA container runtime shows it every GPU
through NVIDIA_VISIBLE_DEVICES=all, as DCGM's exporter does. The metrics go to node_exporter's
textfile directory on the host. RBAC: get and patch on nodes, nothing else.
"""

from __future__ import annotations

from typing import Any

from launchers.actions.node_actions import TAINT_KEY
from launchers.cloud.cloudjob import CloudJob

CHECK_EVERY_S = 600
TEXTFILE_DIR = "/var/lib/node_exporter/textfile_collector"  # node_exporter --collector.textfile.directory
SCRATCH_DIR = "/var/tmp/stoker-check"  # the node's local disk, for the short disk test


def _meta(job: CloudJob, name: str, namespaced: bool = True) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespaced and job.namespace:
        meta["namespace"] = job.namespace
    meta["labels"] = {"app.kubernetes.io/name": "stoker", "stoker.dev/job": job.name}
    return meta


def loop_script(job: CloudJob) -> str:
    """The container's command: the check, then a sleep, for ever. stoker check ends itself
    within its --limit; the metrics file says when it last ran."""
    return (
        f"mkdir -p {SCRATCH_DIR}\n"
        f"S=$(command -v stoker || echo {job.stoker_dir}/.venv/bin/stoker)\n"
        "while true; do\n"
        f'  "$S" check --k8s-node "$NODE_NAME" --path {SCRATCH_DIR} '
        f"--prometheus {TEXTFILE_DIR}/stoker.prom\n"
        f"  sleep {CHECK_EVERY_S}\n"
        "done\n"
    )


def daemonset(job: CloudJob) -> dict[str, Any]:
    labels = {"app.kubernetes.io/name": "stoker", "stoker.dev/job": job.name}
    container: dict[str, Any] = {
        "name": "stoker-check",
        "image": job.image,
        "command": ["bash", "-c", loop_script(job)],
        "env": [
            {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
            {"name": "STOKER_HOSTNAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
            {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"},
        ],
        "resources": {"requests": {"cpu": "100m", "memory": "512Mi"}, "limits": {"memory": "4Gi"}},
        "volumeMounts": [
            {"name": "textfile", "mountPath": TEXTFILE_DIR},
            {"name": "scratch", "mountPath": SCRATCH_DIR},
            {"name": "dshm", "mountPath": "/dev/shm"},
        ],
    }
    spec: dict[str, Any] = {
        "serviceAccountName": job.name,
        "tolerations": [{"key": TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}],
        "containers": [container],
        "volumes": [
            {"name": "textfile", "hostPath": {"path": TEXTFILE_DIR, "type": "DirectoryOrCreate"}},
            {"name": "scratch", "hostPath": {"path": SCRATCH_DIR, "type": "DirectoryOrCreate"}},
            {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}},
        ],
    }
    if job.node_selector:
        spec["nodeSelector"] = dict(job.node_selector)
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": _meta(job, job.name),
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": dict(labels)}, "spec": spec},
        },
    }


def documents(job: CloudJob) -> list[dict[str, Any]]:
    sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(job, job.name)}
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": _meta(job, job.name, namespaced=False),
        "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"]}],
    }
    subject = {"kind": "ServiceAccount", "name": job.name, "namespace": job.namespace or "default"}
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": _meta(job, job.name, namespaced=False),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": job.name},
        "subjects": [subject],
    }
    return [sa, role, binding, daemonset(job)]
