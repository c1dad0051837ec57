"""The Kubernetes, SkyPilot and dstack jobs (launchers/cloud/k8s.py, launchers/cloud/skypilot_dstack.py): golden
files per platform x fabric, compared line by line, and the values that could be wrong
computed by hand. Schema validation: tests/unit/test_cloud_validate.py."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from launchers.cloud.cloudjob import CloudJob, node_script, stoker_args
from launchers.cloud.fabrics import FABRICS
from launchers.cloud.skypilot_dstack import DSTACK
from launchers.cloud.submit_cloud import render
from launchers.profiles import get_profile, with_overrides
from tests.conftest import DATA

GOLDEN = DATA / "launchers" / "cloud"
SPEC = "name: golden\ngpus_per_node: 8\n"


def base_job(fabric: str = "ib", kind: str = "job", **kw: object) -> CloudJob:
    return CloudJob(
        name="stoker-golden",
        nodes=2,
        gpus_per_node=8,
        profile=get_profile("quick"),
        image="registry.example/stoker:1.0",
        fabric=fabric,
        kind=kind,
        results_volume="stoker-results-rwx",
        **kw,
    )  # type: ignore[arg-type]


# (golden file, platform, job): every fabric on every platform; the k8s kinds on one each;
# node selection, Kueue, an input spec and no shared volume on the ones that show them
CASES: dict[str, tuple[str, CloudJob]] = {
    **{f"k8s-job-{f}.yaml": ("k8s", base_job(f)) for f in FABRICS},
    **{f"skypilot-{f}.yaml": ("skypilot", base_job(f)) for f in FABRICS},
    **{f"dstack-{f}.yaml": ("dstack", base_job(f)) for f in FABRICS},
    "k8s-jobset-ib.yaml": (
        "k8s",
        base_job(
            "ib",
            "jobset",
            namespace="acceptance",
            queue="gpu-queue",
            topology="cloud.provider.com/topology-block",
        ),
    ),
    "k8s-mpijob-efa.yaml": ("k8s", base_job("efa", "mpijob", namespace="acceptance")),
    # `stoker check` on every GPU node, a DaemonSet (launchers/cloud/k8s_check.py)
    "k8s-check-daemonset.yaml": (
        "k8s",
        base_job("ib", "check", namespace="ops", node_selector=(("nvidia.com/gpu.present", "true"),)),
    ),
    "k8s-job-roce-selector-spec.yaml": (
        "k8s",
        replace(
            base_job(
                "roce",
                node_selector=(("node.kubernetes.io/instance-type", "gpu-h100-8x"),),
                networks="sriov-a,sriov-b",
                spec_text=SPEC,
            ),
            results_volume=None,
        ),
    ),
    "skypilot-ib-tier-spec.yaml": (
        "skypilot",
        base_job("ib", network_tier="best", spec_text=SPEC, spec_path="/home/me/spec.yaml"),
    ),
    "dstack-tcp-spec-novolume.yaml": (
        "dstack",
        replace(base_job("tcp", spec_text=SPEC, spec_path="/home/me/spec.yaml"), results_volume=None),
    ),
    # the training data's PVC as the shared storage, a site taint tolerated, 16 CPUs asked
    "k8s-job-ib-data-toleration.yaml": (
        "k8s",
        base_job(
            "ib",
            data_volume="training-data",
            tolerations=(("dedicated", "gpu", "NoSchedule"), ("maintenance", "", "")),
            cpus_per_node=16,
        ),
    ),
    "k8s-job-cpu.yaml": (
        "k8s",
        replace(
            base_job("tcp"),
            gpus_per_node=0,
            backend="gloo",
            profile=with_overrides(get_profile("quick"), max_bytes="8M"),
        ),
    ),
}


def rendered(name: str) -> str:
    platform, job = CASES[name]
    return render(job, platform)


@pytest.mark.parametrize("name", sorted(CASES))
def test_render_matches_golden(name: str) -> None:
    assert rendered(name).splitlines() == (GOLDEN / name).read_text(encoding="utf-8").splitlines()


def write_goldens(directory: Path = GOLDEN) -> None:
    """Regenerate the golden files after an intended change (then read the diff):
    python -c 'from tests.unit.test_cloud_render import write_goldens; write_goldens()'"""
    for name in CASES:
        (directory / name).write_text(rendered(name), encoding="utf-8")


def docs(name: str) -> list[dict]:
    return list(yaml.safe_load_all(rendered(name)))


def docs_of(job: CloudJob) -> list[dict]:
    return list(yaml.safe_load_all(render(job, "k8s")))


def container(doc: dict) -> dict:
    return doc["spec"]["template"]["spec"]["containers"][0]


def test_indexed_job_is_one_world_of_two_pods() -> None:
    svc, job = docs("k8s-job-ib.yaml")
    assert (svc["kind"], svc["spec"]["clusterIP"], job["kind"]) == ("Service", "None", "Job")
    spec = job["spec"]
    assert (
        spec["completionMode"],
        spec["completions"],
        spec["parallelism"],
        spec["backoffLimitPerIndex"],
    ) == (
        "Indexed",
        2,
        2,
        0,
    )
    # quick: preflight (120 + 120) + inventory (120 + 120) + compute (200 + 120) + 3 net phases x (180 + 120)
    # + storage (180 + 120) + report 120 + margin 300, + the 600 s start barrier
    assert spec["activeDeadlineSeconds"] == 240 + 240 + 320 + 3 * 300 + 300 + 120 + 300 + 600 == 3020
    pod = spec["template"]["spec"]
    assert pod["subdomain"] == svc["metadata"]["name"] == "stoker-golden"
    env = {e["name"]: e["value"] for e in container(job)["env"]}
    assert env["MASTER_ADDR"] == "stoker-golden-0.stoker-golden"  # pod 0's host name under the Service
    assert (env["NNODES"], env["STOKER_EXPECT_NODES"], env["NPROC_PER_NODE"]) == ("2", "2", "8")
    assert env["OUT"] == "/stoker-results/stoker-golden" and env["SHARED_OUT"] == "1"
    # 8 GPU ranks x 8 CPUs = 64, requested = limit (Guaranteed)
    assert container(job)["resources"]["limits"] == {
        "nvidia.com/gpu": 8,
        "rdma/ib": 1,
        "cpu": 64,
        "memory": "43Gi",
    }
    dshm = [v for v in pod["volumes"] if v["name"] == "dshm"][0]
    assert dshm["emptyDir"] == {"medium": "Memory", "sizeLimit": "16Gi"}  # 2 GiB x 8 ranks
    assert [v for v in pod["volumes"] if v["name"] == "results"][0]["persistentVolumeClaim"] == {
        "claimName": "stoker-results-rwx"
    }
    assert 'NODE_RANK="$JOB_COMPLETION_INDEX"' in container(job)["command"][2]
    assert env["FAIL_UNJUDGED"] == "1"  # nothing judged is no acceptance, as the Slurm job
    allowed = docs_of(replace(base_job(), allow_unjudged=True))[1]
    assert {e["name"]: e["value"] for e in container(allowed)["env"]}["FAIL_UNJUDGED"] == "0"


@pytest.mark.parametrize(
    "fabric,limits,pod_keys,caps",
    [
        ("ib", {"rdma/ib": 1}, set(), ["IPC_LOCK"]),
        ("efa", {"vpc.amazonaws.com/efa": 32, "hugepages-2Mi": "5120Mi"}, set(), ["IPC_LOCK"]),
        ("roce", {"nvidia.com/sriov_rdma_vf": 1}, set(), ["IPC_LOCK"]),  # one VF per attachment
        ("tcp", {}, {"hostNetwork", "dnsPolicy"}, None),
    ],
)
def test_each_fabric_adds_its_entry(fabric: str, limits: dict, pod_keys: set, caps: list | None) -> None:
    job = docs(f"k8s-job-{fabric}.yaml")[1]
    c, pod = container(job), job["spec"]["template"]["spec"]
    assert c["resources"]["limits"] == {"nvidia.com/gpu": 8, **limits, "cpu": 64, "memory": "43Gi"}
    assert c["resources"]["requests"] == c["resources"]["limits"]
    assert {"hostNetwork", "dnsPolicy"} & set(pod) == pod_keys
    if pod_keys:
        assert (pod["hostNetwork"], pod["dnsPolicy"]) == (True, "ClusterFirstWithHostNet")
    assert c.get("securityContext", {}).get("capabilities", {}).get("add") == caps


def test_roce_annotation_selector_and_no_volume() -> None:
    cm, svc, job = docs("k8s-job-roce-selector-spec.yaml")
    pod = job["spec"]["template"]
    assert pod["metadata"]["annotations"] == {"k8s.v1.cni.cncf.io/networks": "sriov-a,sriov-b"}
    assert pod["spec"]["nodeSelector"] == {"node.kubernetes.io/instance-type": "gpu-h100-8x"}
    assert [v for v in pod["spec"]["volumes"] if v["name"] == "results"][0] == {
        "name": "results",
        "emptyDir": {},
    }
    assert cm["kind"] == "ConfigMap" and cm["data"] == {"spec.yaml": SPEC}
    assert "--spec /stoker-inputs/spec.yaml" in container(job)["command"][2]
    env = {e["name"]: e["value"] for e in container(job)["env"]}
    assert env["SHARED_OUT"] == "0"  # node 0's log carries the summary


def test_cpu_job_has_no_gpu_limit_and_passes_the_override() -> None:
    job = docs("k8s-job-cpu.yaml")[1]
    assert container(job)["resources"]["limits"] == {"cpu": 4, "memory": "13Gi"}  # no GPUs; 2 ranks x 2 CPUs
    env = {e["name"]: e["value"] for e in container(job)["env"]}
    assert (env["NPROC_PER_NODE"], env["BACKEND"]) == ("2", "gloo")
    assert "torchrun.sh --profile quick --max-bytes 8M &\n" in container(job)["command"][2]


def test_jobset_and_mpijob() -> None:
    (js,) = docs("k8s-jobset-ib.yaml")
    assert js["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "gpu-queue"
    rj = js["spec"]["replicatedJobs"][0]
    tmpl = rj["template"]["spec"]["template"]
    assert (
        tmpl["metadata"]["annotations"]["kueue.x-k8s.io/podset-required-topology"]
        == "cloud.provider.com/topology-block"
    )
    env = {e["name"]: e["value"] for e in tmpl["spec"]["containers"][0]["env"]}
    assert env["MASTER_ADDR"] == "stoker-golden-node-0-0.stoker-golden"
    (mpi,) = docs("k8s-mpijob-efa.yaml")
    specs = mpi["spec"]["mpiReplicaSpecs"]
    assert (mpi["spec"]["slotsPerWorker"], specs["Worker"]["replicas"]) == (8, 2)
    assert (
        "resources" not in specs["Launcher"]["template"]["spec"]["containers"][0]
    )  # no GPUs on the launcher
    assert specs["Worker"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 8


def test_skypilot_and_dstack_tasks() -> None:
    (sky,) = docs("skypilot-efa.yaml")
    assert (sky["num_nodes"], sky["resources"]["accelerators"], sky["resources"]["image_id"]) == (
        2,
        "H100:8",
        "docker:registry.example/stoker:1.0",
    )
    pod = sky["config"]["kubernetes"]["pod_config"]["spec"]["containers"][0]
    assert pod["resources"]["limits"] == {"vpc.amazonaws.com/efa": 32, "hugepages-2Mi": "5120Mi"}
    # SkyPilot sizes the pod's memory itself; it must attach EFA on AWS VMs: the best tier
    assert (sky["resources"]["memory"], sky["resources"]["network_tier"]) == ("43+", "best")
    assert "SKYPILOT_NODE_IPS" in sky["run"] and sky["envs"]["STOKER_EXPECT_NODES"] == "2"
    (ds,) = docs("dstack-ib.yaml")
    assert (ds["type"], ds["nodes"], ds["startup_order"], ds["stop_criteria"]) == (
        "task",
        2,
        "workers-first",
        "master-done",
    )
    assert ds["resources"] == {"gpu": "H100:8", "shm_size": "16GB", "memory": "43GB.."}
    assert "STOKER_EXPECT_NODES=2" in ds["env"] and "DSTACK_MASTER_NODE_IP" in ds["commands"][0]


def test_a_workload_preset_is_passed_by_name() -> None:
    job = replace(base_job(), workload_preset="llama-70b")
    assert stoker_args(job)[-2:] == ["--workload", "llama-70b"]
    assert [d["kind"] for d in docs_of(job)] == ["Service", "Job"]  # no ConfigMap to ship


def test_stoker_args_pass_only_what_differs_from_the_profile() -> None:
    job = replace(
        base_job(), profile=with_overrides(get_profile("standard"), iters=3, ops=("all_reduce", "sendrecv"))
    )
    assert stoker_args(job) == ["--profile", "standard", "--ops", "all_reduce,sendrecv", "--iters", "3"]
    budget = replace(base_job(), profile=with_overrides(get_profile("standard"), compute_budget_s=5.0))
    assert stoker_args(budget) == ["--profile", "standard", "--compute-budget", "5.0"]
    fio_alone = replace(base_job(), profile=with_overrides(get_profile("standard"), save_repeats=0))
    assert stoker_args(fio_alone) == ["--profile", "standard", "--save-repeats", "0"]
    assert node_script(job, DSTACK.rank_env).startswith(
        'export NNODES="$DSTACK_NODES_NUM" NODE_RANK="$DSTACK_NODE_RANK"'
    )


def test_check_daemonset_tolerates_its_own_taint_and_holds_no_gpu() -> None:
    """A DaemonSet that did not tolerate stoker's taint could never untaint a node that
    recovered; one that requested GPUs would hold them from the jobs it guards."""
    sa, role, binding, ds = docs("k8s-check-daemonset.yaml")
    assert [d["kind"] for d in (sa, role, binding, ds)] == [
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "DaemonSet",
    ]
    pod = ds["spec"]["template"]["spec"]
    assert {"key": "stoker.dev/unhealthy", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
    c = container(ds)
    assert "nvidia.com/gpu" not in str(c["resources"])
    assert '--k8s-node "$NODE_NAME"' in c["command"][2] and "--prometheus" in c["command"][2]
    assert role["rules"] == [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"]}]
    assert pod["serviceAccountName"] == sa["metadata"]["name"] == binding["subjects"][0]["name"]
