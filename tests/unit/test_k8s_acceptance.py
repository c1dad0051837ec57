"""The Kubernetes job runs unmodified: Guaranteed pods, the GPU taint tolerated, a TTL, a
failure policy, the training data's volume tested, a start barrier that names who is late,
bare framework images refused with the recipe as the fix, and the repository's Dockerfile.
Schemas and scheduling of the golden k8s-job-ib-data-toleration.yaml: test_cloud_validate.py
and test_k8s_schedule.py (they run every golden case)."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from launchers.cloud.cloudjob import CloudJob
from launchers.cloud.submit_cloud import render
from tests.unit.test_cloud_render import base_job

ROOT = Path(__file__).resolve().parents[2]
K8S = ["submit", "--platform", "k8s", "--nodes", "2", "--gpus-per-node", "8"]


def stoker(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "launchers.cli", *args], capture_output=True, text=True, env=env, timeout=60
    )


def job_spec(job: CloudJob) -> dict:
    (batch,) = [d for d in yaml.safe_load_all(render(job, "k8s")) if d["kind"] == "Job"]
    return batch["spec"]


def test_pods_are_guaranteed_tolerate_the_gpu_taint_and_the_job_has_ttl_and_failure_policy() -> None:
    spec = job_spec(base_job("ib"))
    pod = spec["template"]["spec"]
    (c,) = pod["containers"]
    res = c["resources"]
    # Guaranteed QoS: every container's CPU and memory requested = limit
    assert (
        res["requests"] == res["limits"]
        and res["limits"]["cpu"] == 8 * 8
        and res["limits"]["memory"] == "43Gi"
    )
    assert pod["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert spec["ttlSecondsAfterFinished"] == 86400
    rules = spec["podFailurePolicy"]["rules"]
    assert rules[0] == {
        "action": "FailJob",
        "onExitCodes": {"containerName": "stoker", "operator": "In", "values": [1, 2, 3]},
    }
    assert rules[1]["onPodConditions"] == [{"type": "DisruptionTarget", "status": "True"}]
    env = {e["name"]: e["value"] for e in c["env"]}
    assert env["SYNC_TIMEOUT"] == "600"  # the start barrier, in the deadline too
    # 2420 s of phases (quick, 2 nodes, the preflight's 240 among them) + 600
    assert spec["activeDeadlineSeconds"] == 3020


def test_cpu_pods_tolerate_no_gpu_taint() -> None:
    pod = job_spec(replace(base_job("tcp"), gpus_per_node=0, backend="gloo"))["template"]["spec"]
    assert "tolerations" not in pod
    assert pod["containers"][0]["resources"]["limits"]["cpu"] == 2 * 2


def test_data_volume_is_the_shared_storage_and_tolerations_from_the_command_line() -> None:
    p = stoker(
        *K8S,
        "--image",
        "registry.example/stoker:1",
        "--job-name",
        "acc",
        "--results-volume",
        "rwx",
        "--data-volume",
        "train-data",
        "--toleration",
        "dedicated=gpu:NoSchedule",
        "--toleration",
        "maintenance",
        "--dry-run",
    )
    assert p.returncode == 0, p.stderr
    (batch,) = [d for d in yaml.safe_load_all(p.stdout) if d["kind"] == "Job"]
    pod = batch["spec"]["template"]["spec"]
    assert {"name": "data", "persistentVolumeClaim": {"claimName": "train-data"}} in pod["volumes"]
    c = pod["containers"][0]
    assert {"name": "data", "mountPath": "/stoker-data"} in c["volumeMounts"]
    assert {"name": "SHARED_IO", "value": "/stoker-data/stoker-io-acc"} in c["env"]
    assert pod["tolerations"][1:] == [
        {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"},
        {"key": "maintenance", "operator": "Exists"},
    ]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (
            ["--image", "nvcr.io/nvidia/pytorch:24.12-py3"],
            "a bare framework image, without stoker; build one: docker build",
        ),
        (["--image", "pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime"], "a bare framework image"),
        (["--image", "nvcr.io/nvidia/pytorch@sha256:" + "0" * 64], "a bare framework image"),
        (["--image", "x", "--toleration", "a=b:Sometimes"], "use KEY[=VALUE][:EFFECT]"),
        (["--image", "x", "--cpus-per-node", "0"], "--cpus-per-node must be at least 1"),
    ],
)
def test_refusals_are_one_line(args: list[str], needle: str) -> None:
    p = stoker(*K8S, *args, "--results-volume", "rwx", "--dry-run")
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and needle in p.stderr, p.stderr


def test_data_volume_is_k8s_only() -> None:
    p = stoker(
        "submit", "--platform", "dstack", "--nodes", "2", "--image", "x", "--data-volume", "d", "--dry-run"
    )
    assert p.returncode == 2 and "--data-volume applies to --platform k8s, not dstack" in p.stderr


def test_without_a_results_volume_one_line_says_where_the_results_go() -> None:
    p = stoker(*K8S, "--image", "x", "--job-name", "acc", "--fabric", "tcp", "--dry-run")
    assert p.returncode == 0
    (line,) = p.stderr.splitlines()  # --fabric given: no line saying it was not known
    assert line.startswith("stoker submit: warning: no --results-volume: each pod writes its results to ")
    assert "/stoker-results/acc" in line and "lost with the pod" in line


def test_the_start_barrier_names_the_nodes_that_did_not_answer(tmp_path: Path) -> None:
    """Node 0 alone at the barrier: OUT may not be shared, so the run stops naming the others
    (with two or more there, the rest go on: tests/integration/test_torchrun_late_node.py)."""
    out = tmp_path / "out"
    env = {**os.environ, "STOKER_PY": sys.executable, "PYTHONPATH": str(ROOT), "OUT": str(out)}
    env.update(NNODES="3", NODE_RANK="0", SYNC_TIMEOUT="2", NPROC_PER_NODE="2")
    # nodes 1 and 2 never started
    p = subprocess.run(
        ["bash", str(ROOT / "launchers" / "torchrun.sh"), "--profile", "quick"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 2
    line = p.stderr.strip().splitlines()[-1]
    assert "node(s) 1 2 did not answer" in line and "SYNC_TIMEOUT=2" in line and "pulling its image" in line


def test_the_dockerfile_is_ngc_pytorch_with_stoker_fio_and_pinned_nccl_tests() -> None:
    lines = [x.strip() for x in (ROOT / "Dockerfile").read_text().splitlines()]
    assert "FROM nvcr.io/nvidia/pytorch:${NGC_TAG}-py3" in lines
    assert any(x.startswith("ARG NGC_TAG=") and x.split("=")[1][:2].isdigit() for x in lines)
    assert "ARG NCCL_TESTS_VERSION=v2.19.6" in lines  # the release docs/netbench.md builds
    text = "\n".join(lines)
    assert '--branch "${NCCL_TESTS_VERSION}" https://github.com/NVIDIA/nccl-tests.git' in text
    assert "MPI=0" in text and "fio" in text
    assert "COPY . /opt/stoker" in lines  # the default --stoker-dir
    # EFA only when asked: the installer's user space (no kernel module) and aws-ofi-nccl
    assert 'ARG EFA_INSTALLER_VERSION=""' in lines and "ARG AWS_OFI_NCCL_VERSION=1.13.0" in lines
    assert 'if [ -n "${EFA_INSTALLER_VERSION}" ]' in text and "--skip-kmod" in text
    assert "--with-libfabric=/opt/amazon/efa" in text and "--with-cuda=/usr/local/cuda" in text
    assert (
        "python -m pip install --no-cache-dir -e /opt/stoker" in text
        and "[torch]" not in text.split("COPY")[1]
    )
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert ".venv" in ignored and ".git" in ignored


def test_the_shared_file_system_cap_reaches_the_pods() -> None:
    from launchers.cloud.cloudjob import stoker_args
    from launchers.profiles import get_profile

    big = replace(base_job("ib"), nodes=256, profile=get_profile("standard"))
    # 256 nodes x 8 writers x 4 GiB = 8 TiB; within 1 TiB: 1 TiB / 2048 = 512 MiB per writer
    assert stoker_args(big) == ["--profile", "standard", "--ckpt-bytes", "512M"]
    assert stoker_args(replace(big, nodes=4)) == ["--profile", "standard"]  # 128 GiB: the profile's
    # no shared path tested (no results or data volume): each node writes only its own disk
    assert stoker_args(replace(big, results_volume=None)) == ["--profile", "standard"]
