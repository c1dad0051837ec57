"""What the Kubernetes, SkyPilot and dstack jobs share (pure): their settings, and the one
command each node runs — launchers/torchrun.sh (the acceptance phases, launchers/plan.py)
with NNODES / NODE_RANK / MASTER_ADDR / NPROC_PER_NODE taken from the platform's own
variables, and STOKER_EXPECT_NODES rendered in, so a node whose platform variables
describe another world stops in one line before any sweep."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass, fields, replace

from launchers.cloud.fabrics import FABRICS, Fabric, device_row
from launchers.cloud.podmemory import PodMemory
from launchers.plan import CPU_RANKS, JobOptions, JobPlan, job_plan
from launchers.profiles import PROFILES, Profile
from reports.shared.units import parse_size

PLATFORMS = ("slurm", "k8s", "skypilot", "dstack")
K8S_KINDS = ("job", "mpijob", "jobset", "check")  # check: launchers/cloud/k8s_check.py
SHM_PER_RANK_GIB = 2  # /dev/shm: NCCL's shared-memory transport and torch's IPC, per rank
MASTER_PORT = 29500
INPUTS_DIR = "/stoker-inputs"  # where the spec and workload are mounted in the container
LOCAL_DIR = "/stoker-local"  # where the node-local volume is mounted: LOCAL_IO lives in it
DATA_DIR = "/stoker-data"  # where --data-volume (the training data's PVC) is mounted: SHARED_IO in it
# How long every node waits for all the others before any sweep (torchrun.sh SYNC_TIMEOUT):
# pods start minutes apart (image pulls, Pending pods waiting for a node); the deadline adds it
START_BARRIER_S = 600
TTL_AFTER_FINISHED_S = 86400  # the finished job and its pods (node 0's log: the verdict) kept a day
# CPUs per pod, requested = limit (Guaranteed QoS: the kubelet's static CPU and topology
# managers can then align a pod's CPUs, GPUs and NICs): per GPU rank a share every 8-GPU
# shape of tests/harness/k8s_scheduler.py offers (96-192 CPUs), 2 per gloo rank
CPUS_PER_RANK = {True: 8, False: 2}
GPU_TAINT = "nvidia.com/gpu"  # the taint GPU node pools carry (GKE, AKS, the GPU operator's guides)


@dataclass(frozen=True, kw_only=True, slots=True)
class CloudJob:
    name: str  # the job's name (and its run id, and OUT's last part)
    nodes: int
    gpus_per_node: int  # 0: CPU ranks (gloo), no GPU request
    profile: Profile
    image: str  # an image with stoker in stoker_dir (./install.sh)
    fabric: str = "tcp"
    backend: str = "auto"
    out: str = "/stoker-results"  # results root in the container; OUT = out/name
    results_volume: str | None = None  # k8s: a ReadWriteMany PVC; dstack/SkyPilot: a volume name
    stoker_dir: str = "/opt/stoker"
    inputs_dir: str = INPUTS_DIR  # where the spec and workload appear in the container
    spec_text: str | None = None  # read at the edge; shipped as a ConfigMap / file
    workload_text: str | None = None
    spec_path: str | None = None  # the local files (SkyPilot / dstack upload them)
    workload_path: str | None = None
    workload_preset: str | None = None  # a preset name (llama-70b): passed as given, nothing shipped
    namespace: str | None = None
    kind: str = "job"  # k8s: job (Indexed Job + Service), mpijob, jobset
    node_selector: tuple[tuple[str, str], ...] = ()
    queue: str | None = None  # Kueue LocalQueue (label kueue.x-k8s.io/queue-name)
    topology: str | None = None  # Kueue: all pods within one domain of this node label
    network_tier: str | None = None  # SkyPilot resources.network_tier
    networks: str | None = None  # Multus networks for roce
    fabric_devices: int | None = None  # override of the fabric's device count per pod
    device_plugin: str | None = None  # fabrics.DEVICES row (None: the fabric's first)
    instance_type: str | None = None  # EFA: the row's device count; k8s node selector too
    fabric_resources: tuple[tuple[str, int], ...] = ()  # --fabric-resource: replaces the row
    local_volume: str | None = None  # hostpath:/DIR or ephemeral:CLASS[:SIZE]; None: emptyDir
    allow_unjudged: bool = False  # False: nothing compared with a reference fails the job
    # fewest nodes left after the preflight (torchrun.sh MIN_NODES); None: its default, 2 (1 on one node)
    min_nodes: int | None = None
    data_volume: str | None = None  # k8s: a PVC (the training data's) tested as shared storage
    # k8s: the spec's storage paths the pods measure (launchers/spec_paths.py pod_storage): LOCAL_IO
    # and SHARED_IO, and each path mounted at itself, (path, its PVC or "" for the node's directory)
    spec_local: str | None = None
    spec_shared: str | None = None
    spec_mounts: tuple[tuple[str, str], ...] = ()
    cpus_per_node: int | None = None  # None: CPUS_PER_RANK per rank
    # --toleration KEY[=VALUE][:EFFECT] beyond the GPU taint's: (key, value, effect), "" for none
    tolerations: tuple[tuple[str, str, str], ...] = ()

    @property
    def ranks_per_node(self) -> int:
        return self.gpus_per_node or CPU_RANKS

    @property
    def fab(self) -> Fabric:
        return FABRICS[self.fabric]

    @property
    def run_dir(self) -> str:
        return f"{self.out.rstrip('/')}/{self.name}"

    @property
    def shared(self) -> bool:
        return self.results_volume is not None

    @property
    def options(self) -> JobOptions:
        return JobOptions(profile=self.profile, nodes=self.nodes, gpus_per_node=self.gpus_per_node)

    @property
    def plan(self) -> JobPlan:
        """The acceptance's plan at this N (launchers/plan.py): what torchrun.sh runs on each node."""
        return job_plan(self.options)

    @property
    def deadline_s(self) -> int:
        """Every phase at its limit for this N (the plan's job limit) and the start barrier."""
        return self.plan.job_limit_s + START_BARRIER_S

    @property
    def cpus(self) -> int:
        return self.cpus_per_node or self.ranks_per_node * CPUS_PER_RANK[self.gpus_per_node > 0]

    @property
    def shm_gib(self) -> int:
        return SHM_PER_RANK_GIB * self.ranks_per_node

    @property
    def writers(self) -> int:
        """Checkpoint writers per node: one per GPU, as `stoker run` (torchrun.sh passes it)."""
        return self.options.writers_per_node

    @property
    def devices(self) -> tuple[tuple[str, int], ...]:
        """The fabric's extended resources per pod: --fabric-resource, else the table's row
        (its count times the Multus attachments where per attachment; --fabric-devices)."""
        if self.fabric_resources:
            return self.fabric_resources
        row = device_row(self.fabric, self.device_plugin, self.instance_type)
        if row is None:
            return ()
        count = row.count * (len(self.attachments) if row.per_attachment else 1)
        return ((row.resource, self.fabric_devices or count),)

    @property
    def attachments(self) -> list[str]:
        return [n.strip() for n in (self.networks or "sriov-rdma").split(",") if n.strip()]

    @property
    def memory(self) -> PodMemory:
        p = self.profile
        return PodMemory(
            shm_bytes=self.shm_gib << 30,
            ranks=self.ranks_per_node,
            gpus=self.gpus_per_node > 0,
            max_bytes=parse_size(p.max_bytes, "--max-bytes"),
            writers=self.writers if "checkpoint" in p.workloads else 0,
            ckpt_bytes=parse_size(p.ckpt_bytes, "--ckpt-bytes") if "checkpoint" in p.workloads else 0,
        )


# profile field -> the option that sets it (`stoker run`'s, which torchrun.sh takes)
_KNOBS = {
    "ops": "--ops",
    "min_bytes": "--min-bytes",
    "max_bytes": "--max-bytes",
    "step_factor": "--step-factor",
    "iters": "--iters",
    "warmup": "--warmup",
    "workloads": "--workloads",
    "ckpt_bytes": "--ckpt-bytes",
    "io_runtime_s": "--io-runtime",
    "save_repeats": "--save-repeats",
    "net_timeout_s": "--net-timeout",
    "io_timeout_s": "--io-timeout",
    "compute_budget_s": "--compute-budget",
}


def capped_profile(job: CloudJob) -> Profile:
    """The profile with the checkpoint shard per writer within the shared file system's cap
    (the plan's) when a shared path is tested (a results or data volume)."""
    p = job.profile
    if not (job.shared or job.data_volume or job.spec_shared) or "checkpoint" not in p.workloads:
        return p
    return replace(p, ckpt_bytes=job.plan.ckpt_bytes)


def stoker_args(job: CloudJob) -> list[str]:
    """torchrun.sh's arguments: the profile, the knobs that differ from it, the inputs."""
    p, base = capped_profile(job), PROFILES.get(job.profile.name)
    args = ["--profile", p.name]
    for f in fields(p):
        value = getattr(p, f.name)
        if f.name in _KNOBS and value is not None and (base is None or value != getattr(base, f.name)):
            args += [_KNOBS[f.name], ",".join(value) if isinstance(value, tuple) else str(value)]
    if job.spec_text is not None:
        args += ["--spec", f"{job.inputs_dir}/spec.yaml"]
    if job.workload_text is not None:
        args += ["--workload", f"{job.inputs_dir}/workload.yaml"]
    elif job.workload_preset:
        args += ["--workload", job.workload_preset]
    return args


def node_env(job: CloudJob) -> list[tuple[str, str]]:
    """Settings every node gets as literal environment (the platform adds its own)."""
    env = [
        ("STOKER_EXPECT_NODES", str(job.nodes)),
        ("OUT", job.run_dir),
        ("BACKEND", job.backend),
        ("STOKER_RUN_ID", job.name),
        ("SHARED_OUT", "1" if job.shared else "0"),
        ("MASTER_PORT", str(MASTER_PORT)),
        ("FAIL_UNJUDGED", "0" if job.allow_unjudged else "1"),
        ("SYNC_TIMEOUT", str(START_BARRIER_S)),
    ]
    if job.min_nodes is not None:
        env.append(("MIN_NODES", str(job.min_nodes)))
    if job.data_volume:  # the training data's volume, tested as the shared storage
        env.append(("SHARED_IO", f"{DATA_DIR}/stoker-io-{job.name}"))
    elif (
        job.spec_shared
    ):  # the spec's shared path, mounted at itself; stoker io works in a dir of its own there
        env.append(("SHARED_IO", job.spec_shared))
    if job.local_volume:  # the node's own disk, mounted at LOCAL_DIR (k8s.py, tasks.py)
        env.append(("LOCAL_IO", f"{LOCAL_DIR}/stoker-io"))
    elif job.spec_local:  # the spec's local path on the node, mounted at itself
        env.append(("LOCAL_IO", job.spec_local))
    fab = list(job.fab.env)
    # the fabric's names: mpirun.sh forwards each to every rank (-x), as it does the run id
    return env + fab + [("STOKER_RANK_ENV", ",".join(k for k, _ in fab))]


@dataclass(frozen=True, kw_only=True, slots=True)
class Platform:
    """One platform `stoker submit` renders the job for (k8s, SkyPilot, dstack; Slurm's sbatch
    is launchers/slurm/sbatch.py): its client, how its variables become torchrun.sh's, how the job is
    rendered and applied, and where node 0's log is read. launchers/cloud/k8s.py and
    launchers/cloud/skypilot_dstack.py each declare theirs; launchers/cloud/submit_cloud.py keys them by
    --platform."""

    name: str  # its word of PLATFORMS
    client: str  # the platform's own command, looked up on PATH
    rank_env: str  # its variables -> torchrun.sh's: a bash fragment evaluated on the node
    render: Callable[[CloudJob, str], str]  # (job, accelerator) -> the YAML
    apply: Callable[[str, CloudJob, str], list[str]]  # (client, job, YAML file) -> argv; YAML on stdin too
    logs: Callable[[CloudJob], str]  # where the verdict's stoker-summary line is read, without a volume


def node_script(job: CloudJob, rank_env: str) -> str:
    """The bash each node runs: map the platform's variables (Platform.rank_env), then torchrun.sh."""
    run = " ".join(
        shlex.quote(t) for t in ["bash", f"{job.stoker_dir}/launchers/torchrun.sh", *stoker_args(job)]
    )
    return f"export {rank_env}\nexec {run}\n"


def dump_yaml(docs: list[dict[str, object]]) -> str:
    """YAML out: keys in the order built, multi-line strings (scripts) as literal blocks."""
    import yaml  # here: `stoker --help` must stay fast

    class Dumper(yaml.SafeDumper):
        pass

    def text(d: yaml.SafeDumper, s: str) -> yaml.ScalarNode:
        return d.represent_scalar("tag:yaml.org,2002:str", s, style="|" if "\n" in s else None)

    Dumper.add_representer(str, text)
    return yaml.dump_all(docs, Dumper=Dumper, sort_keys=False, default_flow_style=False, width=1000)
