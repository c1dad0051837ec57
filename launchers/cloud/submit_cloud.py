"""`stoker submit --platform k8s|skypilot|dstack`: render the acceptance job for that
platform (launchers/cloud/k8s.py, launchers/cloud/skypilot_dstack.py) and apply it with the platform's own client
(`kubectl apply -f -`, `sky launch`, `dstack apply`); `--dry-run` prints the YAML."""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from launchers.cloud.cloudjob import DATA_DIR, K8S_KINDS, LOCAL_DIR, PLATFORMS, CloudJob, Platform
from launchers.cloud.fabrics import AUTO, DEVICES, FABRICS, choose, device_row, parse_resources
from launchers.cloud.k8s import K8S, local_volume, parse_toleration, pod_dirs
from launchers.cloud.skypilot_dstack import DSTACK, SKYPILOT
from launchers.options import checked_file, checked_workload, profile_from_args
from launchers.spec_paths import PodStorage, pod_storage
from reports.shared.errors import UsageError
from reports.shared.spec import load_spec

_DNS_LABEL = re.compile(r"^[a-z]([-a-z0-9]{0,48}[a-z0-9])?$")
_CLOUD_ONLY = (  # --image is the Slurm job's too: its steps run in it (pyxis/enroot)
    "namespace",
    "kind",
    "node_selector",
    "queue",
    "topology",
    "results_volume",
    "network_tier",
    "networks",
    "fabric_devices",
    "fabric_resource",
    "device_plugin",
    "instance_type",
    "local_volume",
    "job_name",
    "data_volume",
    "toleration",
    "cpus_per_node",
    "allow_unmeasured",
)
# Framework images without stoker, fio or nccl-tests, by repository (tag and digest aside):
# the job would stop at its first line; the repository's Dockerfile builds one on such a base
BARE_IMAGES = (
    "nvcr.io/nvidia/pytorch",
    "nvcr.io/nvidia/cuda",
    "nvcr.io/nvidia/nemo",
    "pytorch/pytorch",
    "docker.io/pytorch/pytorch",
    "nvidia/cuda",
    "docker.io/nvidia/cuda",
)
OUT_ROOT = "/stoker-results"  # the results root in the container without --out (CloudJob.out)
BUILD_HINT = "docker build -t REGISTRY/stoker:TAG . in a stoker checkout (its Dockerfile: NGC PyTorch + stoker, fio, nccl-tests)"
# Each platform's record, by --platform (client, rank variables, render, apply, logs)
CLOUD: dict[str, Platform] = {p.name: p for p in (K8S, SKYPILOT, DSTACK)}
assert set(CLOUD) == set(PLATFORMS) - {"slurm"}  # slurm: launchers/slurm/submit.py runs sbatch


def add_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("Kubernetes, SkyPilot and dstack (--platform k8s|skypilot|dstack)")
    g.add_argument(
        "--platform", choices=PLATFORMS, default="slurm", help="where the job runs (default slurm)"
    )
    g.add_argument(
        "--image",
        help="container image with stoker installed in --stoker-dir (required off Slurm); on Slurm "
        "every step runs stoker in it (srun --container-image, pyxis/enroot)",
    )
    g.add_argument(
        "--stoker-dir", default="/opt/stoker", help="the stoker checkout in the image (default /opt/stoker)"
    )
    g.add_argument("--namespace", help="k8s: namespace of the job")
    g.add_argument(
        "--kind",
        choices=K8S_KINDS,
        default="job",
        help="k8s: job (Indexed Job + headless Service, default), jobset, mpijob (MPI Operator), "
        "check (a DaemonSet running `stoker check` on every node; needs no --nodes)",
    )
    g.add_argument(
        "--fabric",
        choices=(AUTO, *FABRICS),
        help="network fabric: adds its devices, environment and pod settings (k8s, SkyPilot, dstack: "
        "default auto: the spec's network.fabric or its inter-node link's, else tcp with a warning); "
        "on Slurm its NCCL / libfabric variables (default: none set)",
    )
    g.add_argument(
        "--fabric-devices", type=int, help="the device plugin's count per pod (default: the fabric table's)"
    )
    g.add_argument(
        "--device-plugin",
        choices=tuple(dict.fromkeys(r.plugin for r in DEVICES)),
        help="which plugin advertises the fabric's devices: ib coreweave (rdma/ib, default), rdma-shared "
        "(rdma/rdma_shared_device_a), hostdev (nvidia.com/hostdev); roce sriov; efa aws-efa",
    )
    g.add_argument(
        "--instance-type",
        help="efa: the instance type, for its EFA count (p5/p5e 32, p5en 16, p4d/p4de 4; default "
        "p5.48xlarge); k8s: a node selector on it; skypilot: resources.instance_type",
    )
    g.add_argument(
        "--fabric-resource",
        action="append",
        default=[],
        metavar="NAME=COUNT",
        help="request this extended resource per pod instead of the table's (repeatable), "
        "e.g. rdma/shared_ib=1",
    )
    g.add_argument(
        "--local-volume",
        metavar="hostpath:/DIR|ephemeral:CLASS[:SIZE]",
        help="the node's own disk for the local storage test (k8s default: an emptyDir); "
        "dstack: hostpath only",
    )
    g.add_argument(
        "--networks", help="roce: Multus network attachments, comma-separated (default sriov-rdma)"
    )
    g.add_argument(
        "--node-selector",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="k8s: schedule only on nodes with this label (repeatable)",
    )
    g.add_argument("--queue", help="k8s: Kueue LocalQueue to submit to")
    g.add_argument(
        "--topology",
        metavar="NODE_LABEL",
        help="k8s: Kueue topology-aware scheduling: all pods in one domain of this label",
    )
    g.add_argument(
        "--results-volume",
        metavar="NAME",
        help="shared results volume (k8s: a ReadWriteMany PVC); without it node 0's log holds the answer",
    )
    g.add_argument(
        "--data-volume",
        metavar="PVC",
        help="k8s: a PersistentVolumeClaim (the training data's) mounted in every pod and tested as the shared storage",
    )
    g.add_argument(
        "--toleration",
        action="append",
        default=[],
        metavar="KEY[=VALUE][:EFFECT]",
        help="k8s: tolerate this taint too (repeatable); GPU pods always tolerate nvidia.com/gpu",
    )
    g.add_argument(
        "--allow-unmeasured",
        action="store_true",
        default=None,
        help="k8s: submit even when the pods cannot measure some of the spec's storage paths (named in "
        "one stderr line); without it such a spec is refused",
    )
    g.add_argument(
        "--cpus-per-node",
        type=int,
        help="k8s: CPUs per pod, requested = limit (default 8 per GPU, 2 per CPU rank)",
    )
    g.add_argument("--network-tier", choices=("best", "standard"), help="skypilot: resources.network_tier")
    g.add_argument("--accelerator", default="H100", help="skypilot/dstack: GPU name (default H100)")
    g.add_argument("--job-name", help="job name (default stoker-<time>)")


def _pairs(items: list[str]) -> tuple[tuple[str, str], ...]:
    out = []
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--node-selector {item!r}: use KEY=VALUE")
        out.append((key, value))
    return tuple(out)


def check_slurm_args(args: argparse.Namespace) -> None:
    """The cloud options mean nothing to the sbatch job: say so rather than ignore them."""
    given = [n for n in _CLOUD_ONLY if getattr(args, n) not in (None, [], "job")]
    if given:
        raise UsageError(
            f"--{given[0].replace('_', '-')} applies to --platform k8s|skypilot|dstack, not slurm"
        )


def job_from_args(args: argparse.Namespace, cwd: Path, stamp: str) -> CloudJob:
    if args.nodes < 1:
        raise UsageError(f"--nodes must be at least 1, got {args.nodes}")
    if args.gpus_per_node < 0:
        raise UsageError(f"--gpus-per-node must not be negative, got {args.gpus_per_node}")
    if not args.image:
        raise UsageError(
            f"--platform {args.platform} needs --image: an image with stoker installed in {args.stoker_dir}"
        )
    check_image(args.image)
    if args.platform != "k8s":
        given = [
            o
            for o in ("data_volume", "toleration", "cpus_per_node", "allow_unmeasured")
            if getattr(args, o, None)
        ]
        if given:
            raise UsageError(f"--{given[0].replace('_', '-')} applies to --platform k8s, not {args.platform}")
    if args.cpus_per_node is not None and args.cpus_per_node < 1:
        raise UsageError(f"--cpus-per-node must be at least 1, got {args.cpus_per_node}")
    name = args.job_name or f"stoker-{stamp}"
    if not _DNS_LABEL.match(name):
        raise UsageError(
            f"--job-name {name!r}: use lower-case letters, digits and '-', at most 50, starting with a letter"
        )
    if args.kind == "mpijob" and not args.results_volume:
        raise UsageError(
            "--kind mpijob needs --results-volume: the launcher and worker 0 must share the results"
        )
    spec = checked_file(args.spec, "--spec", cwd)
    args.fabric, note = choose(args.fabric, load_spec(spec) if spec and args.fabric in (None, AUTO) else None)
    resources = parse_resources(args.fabric_resource)
    if not resources:
        device_row(args.fabric, args.device_plugin, args.instance_type)  # one line if no row fits
    if args.local_volume:
        local_volume(args.local_volume)  # its shape, one line when bad
        if args.platform == "dstack" and not args.local_volume.startswith("hostpath:"):
            raise UsageError(f"--local-volume {args.local_volume!r}: dstack mounts hostpath:/DIR only")
    storage = _pod_storage(args, spec)
    workload = checked_workload(args.workload, cwd)
    preset = workload if workload and not Path(workload).is_absolute() else None
    workload = None if preset else workload
    job = CloudJob(
        name=name,
        nodes=args.nodes,
        gpus_per_node=args.gpus_per_node,
        profile=profile_from_args(args),
        image=args.image,
        fabric=args.fabric,
        backend=args.backend,
        out=args.out or OUT_ROOT,
        results_volume=args.results_volume,
        stoker_dir=args.stoker_dir,
        spec_text=Path(spec).read_text(encoding="utf-8") if spec else None,
        spec_path=spec,
        workload_text=Path(workload).read_text(encoding="utf-8") if workload else None,
        workload_path=workload,
        workload_preset=preset,
        namespace=args.namespace,
        kind=args.kind,
        node_selector=_pairs(args.node_selector),
        queue=args.queue,
        topology=args.topology,
        network_tier=args.network_tier,
        networks=args.networks,
        fabric_devices=args.fabric_devices,
        device_plugin=args.device_plugin,
        instance_type=args.instance_type,
        fabric_resources=resources,
        local_volume=args.local_volume,
        allow_unjudged=bool(getattr(args, "allow_unjudged", False)),
        data_volume=args.data_volume,
        cpus_per_node=args.cpus_per_node,
        spec_local=storage.local if storage else None,
        spec_shared=storage.shared if storage else None,
        spec_mounts=tuple((e.path, e.pvc or "") for e in storage.mounts) if storage else (),
        tolerations=tuple(parse_toleration(t) for t in args.toleration),
        min_nodes=_min_nodes(getattr(args, "min_nodes", None), args.nodes),
    )
    if note and args.kind != "check":  # said once the input is good; the check DaemonSet runs no ranks
        print(f"stoker submit: {note}", file=sys.stderr)
    return job


def _pod_storage(args: argparse.Namespace, spec: str | None) -> PodStorage | None:
    """k8s with --spec: the spec's storage paths the pods mount and measure; a path they cannot is
    refused in one line (exit 2) unless --allow-unmeasured, which names it on stderr instead."""
    if args.platform != "k8s" or args.kind == "check" or not spec:
        return None
    storage = pod_storage(
        load_spec(spec).storage,
        local=f"{LOCAL_DIR}/stoker-io" if args.local_volume else None,
        shared=f"{DATA_DIR}/stoker-io" if args.data_volume else None,
        pod_dirs=pod_dirs(args.out or OUT_ROOT, args.stoker_dir),
    )
    if storage.refused:
        what = "; ".join(storage.refused)
        if not args.allow_unmeasured:
            raise UsageError(
                f"the Kubernetes job cannot measure the spec's {what}; fix the spec, or pass "
                "--allow-unmeasured to submit without measuring it"
            )
        print(f"stoker submit: warning: this job cannot measure the spec's {what}", file=sys.stderr)
    return storage


def _min_nodes(given: int | None, nodes: int) -> int | None:
    """--min-nodes, checked: the fewest nodes torchrun.sh goes on with after its preflight."""
    if given is not None and not 1 <= given <= nodes:
        raise UsageError(f"--min-nodes {given}: give 1 to --nodes ({nodes})")
    return given


def check_image(image: str) -> None:
    """One line (exit 2) for a bare framework image: it holds no stoker to run."""
    repo = image.split("@", 1)[0]
    last = repo.rsplit("/", 1)[-1]
    repo = repo[: len(repo) - len(last)] + last.split(":", 1)[0]
    if repo in BARE_IMAGES:
        raise UsageError(f"--image {image}: a bare framework image, without stoker; build one: {BUILD_HINT}")


def results_note(job: CloudJob, platform: str) -> str | None:
    """Without a results volume: one line saying where the results go, and that they go with the pod."""
    if job.shared or job.kind == "check":
        return None
    return (
        f"warning: no --results-volume: each pod writes its results to {job.run_dir} inside itself and "
        f"they are lost with the pod; the verdict is node 0's stoker-summary log line ({platform} logs)"
    )


def render(job: CloudJob, platform: str, accelerator: str = "H100") -> str:
    return CLOUD[platform].render(job, accelerator)


def main(args: argparse.Namespace) -> int:
    job = job_from_args(args, Path.cwd(), time.strftime("%Y%m%d-%H%M%S", time.gmtime()))
    platform = CLOUD[args.platform]
    text = platform.render(job, args.accelerator)
    note = results_note(job, args.platform)
    if note:
        print(f"stoker submit: {note}", file=sys.stderr)
    if args.dry_run:
        sys.stdout.write(text)
        return 0
    client = shutil.which(platform.client)
    if client is None:
        raise UsageError(
            f"{platform.client} not found on PATH: install the {args.platform} client, "
            "or use --dry-run to print the YAML"
        )
    with tempfile.TemporaryDirectory(prefix="stoker-submit-") as tmp:
        path = Path(tmp) / f"{job.name}.yaml"
        path.write_text(text, encoding="utf-8")
        p = subprocess.run(platform.apply(client, job, str(path)), input=text, text=True)
    if p.returncode != 0:
        raise UsageError(f"{platform.client} refused the job (exit {p.returncode}); check it with --dry-run")
    print(
        f"submitted {job.name} on {args.platform}: results in {job.run_dir}"
        f"{'' if job.shared else f' (no shared volume: the verdict is the stoker-summary line in {platform.logs(job)})'}"
    )
    return 0
