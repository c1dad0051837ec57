"""`stoker submit --platform k8s --spec` mounts the spec's storage paths into the pods and
measures them there (launchers/spec_paths.py pod_storage, launchers/cloud/k8s.py): each path at
itself, from the node as a hostPath that must exist (type Directory: nothing is created) or
from the PersistentVolumeClaim the spec names; LOCAL_IO and SHARED_IO are those paths. A spec
path the pods cannot measure is refused in one line, exit 2, unless --allow-unmeasured. The
golden is examples/spec-h100.yaml's Job."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from launchers.cli import build_parser
from launchers.cloud.submit_cloud import job_from_args, render
from reports.shared.errors import UsageError
from tests.conftest import DATA, STOKER

GOLDEN = DATA / "launchers" / "cloud" / "k8s-job-spec-h100.yaml"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "spec-h100.yaml"
K8S = ["submit", "--platform", "k8s", "--nodes", "2", "--gpus-per-node", "8", "--profile", "quick"]
K8S += ["--image", "registry.example/stoker:1.0", "--job-name", "stoker-golden"]
K8S += ["--results-volume", "stoker-results-rwx"]


def job_yaml(spec: Path, *more: str) -> str:
    args = build_parser("submit").parse_args([*K8S, "--spec", str(spec), *more])
    return render(job_from_args(args, spec.parent, "20260101-000000"), "k8s")


def pod(text: str) -> dict:
    job = [d for d in yaml.safe_load_all(text) if d["kind"] == "Job"][0]
    return job["spec"]["template"]["spec"]


def write_golden() -> None:
    """After an intended change (then read the diff):
    python -c 'from tests.unit.test_k8s_spec_storage import write_golden; write_golden()'"""
    GOLDEN.write_text(job_yaml(EXAMPLE), encoding="utf-8")


def test_the_example_specs_job_measures_data_and_scratch() -> None:
    text = job_yaml(EXAMPLE)
    assert text.splitlines() == GOLDEN.read_text(encoding="utf-8").splitlines()
    p = pod(text)
    c = p["containers"][0]
    env = {e["name"]: e["value"] for e in c["env"]}
    assert (env["SHARED_IO"], env["LOCAL_IO"]) == ("/data", "/scratch")
    mounted = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
    volumes = {v["name"]: v for v in p["volumes"]}
    for path in ("/data", "/scratch"):
        assert volumes[mounted[path]]["hostPath"] == {"path": path, "type": "Directory"}


def test_a_pvc_the_spec_names_is_mounted_at_its_path(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "name: pvc\nstorage:\n  - {path: /datasets, kind: shared, read_GBps: 10, pvc: training-data}\n"
    )
    p = pod(job_yaml(spec))
    c = p["containers"][0]
    name = next(m["name"] for m in c["volumeMounts"] if m["mountPath"] == "/datasets")
    assert next(v for v in p["volumes"] if v["name"] == name) == {
        "name": name,
        "persistentVolumeClaim": {"claimName": "training-data"},
    }
    env = {e["name"]: e["value"] for e in c["env"]}
    assert env["SHARED_IO"] == "/datasets" and env["LOCAL_IO"] == "/stoker-local/stoker-io"


def test_a_bad_pvc_name_is_one_line(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text("storage:\n  - {path: /d, kind: shared, pvc: Training_Data}\n")
    with pytest.raises(UsageError, match=r"storage\[0\]\.pvc: expected a PersistentVolumeClaim's name"):
        job_yaml(spec)


@pytest.mark.parametrize(
    ("entries", "says"),
    [
        (
            "- {path: /usr, kind: local}",
            "local storage /usr (mounted there it would hide the image's own /usr)",
        ),
        ("- {path: data, kind: shared}", "shared storage data (not an absolute path"),
        (
            "- {path: /stoker-results/x, kind: shared}",
            "shared storage /stoker-results/x (it overlaps the pod's own mount /stoker-results)",
        ),
        (
            "- {path: /nvme0, kind: local}\n  - {path: /nvme1, kind: local}",
            "local storage /nvme1 (the pods measure one local path, /nvme0",
        ),
    ],
)
def test_a_path_the_pods_cannot_measure_is_refused(tmp_path: Path, entries: str, says: str) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"name: refused\nstorage:\n  {entries}\n")
    argv = [*STOKER, *K8S, "--spec", str(spec), "--dry-run"]
    p = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and p.stdout == "", p.stderr
    assert len(p.stderr.splitlines()) == 1 and says in p.stderr, p.stderr
    assert "--allow-unmeasured" in p.stderr
    kept = subprocess.run(
        [*argv, "--allow-unmeasured"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert kept.returncode == 0, kept.stderr
    assert f"stoker submit: warning: this job cannot measure the spec's {says}" in kept.stderr
    bad = says.split(" (")[0].split()[-1]
    assert all(m["mountPath"] != bad for m in pod(kept.stdout)["containers"][0]["volumeMounts"])


def test_allow_unmeasured_is_the_k8s_jobs() -> None:
    args = build_parser("submit").parse_args(["submit", "--nodes", "2", "--allow-unmeasured"])
    from launchers.cloud.submit_cloud import check_slurm_args

    with pytest.raises(UsageError, match="--allow-unmeasured applies to --platform k8s"):
        check_slurm_args(args)


@pytest.mark.parametrize("version", ["1.30.0", "1.34.0"])
def test_the_example_specs_job_validates_strictly(version: str) -> None:
    from tests.unit.test_cloud_validate import K8S_VERSIONS, core_documents, kv

    assert version in K8S_VERSIONS
    for doc in yaml.safe_load_all(GOLDEN.read_text(encoding="utf-8")):
        for core in core_documents(doc):
            kv.validate(core, version, strict=True)
