"""On Kubernetes node 0's exit code is the Job's verdict: a worker that was set aside, failed,
was killed or lost its node never ends the Job before node 0 reports (launchers/cloud/k8s.py).
Checked on the rendered YAML of the golden cases: the pod's script run by bash with a stand-in
torchrun.sh, and the Job's podFailurePolicy and successPolicy applied as Kubernetes applies
them (the first rule that matches a failed pod decides; docs: "Handling Pod and container
failures" / "Success policy")."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "launchers" / "cloud"
CASES = ["k8s-job-ib.yaml", "k8s-job-cpu.yaml", "k8s-jobset-ib.yaml"]


def job_spec(name: str) -> dict[str, Any]:
    for doc in yaml.safe_load_all((GOLDEN / name).read_text()):
        if doc["kind"] == "Job":
            return doc["spec"]
        if doc["kind"] == "JobSet":
            return doc["spec"]["replicatedJobs"][0]["template"]["spec"]
    raise AssertionError(f"{name}: no Job")


def action(spec: dict[str, Any], exit_code: int, disrupted: bool = False) -> str:
    """What the Job controller does with a failed pod: the first matching rule's action;
    none matching counts the failure against the index's backoff (here 0: FailIndex too)."""
    for rule in spec["podFailurePolicy"]["rules"]:
        if "onExitCodes" in rule:
            on = rule["onExitCodes"]
            assert on["containerName"] == "stoker"
            inside = exit_code in on["values"]
            if inside == (on["operator"] == "In"):
                return str(rule["action"])
        else:
            wanted = {(c["type"], c["status"]) for c in rule["onPodConditions"]}
            if disrupted and ("DisruptionTarget", "True") in wanted:
                return str(rule["action"])
    assert spec["backoffLimitPerIndex"] == 0
    return "FailIndex"


def script_exit(name: str, rank: int, torchrun_rc: int, tmp_path: Path) -> tuple[int, str]:
    """The rendered pod script run with JOB_COMPLETION_INDEX=rank, torchrun.sh replaced by
    one that exits torchrun_rc: (the pod's exit code, its stderr)."""
    spec = job_spec(name)
    (container,) = spec["template"]["spec"]["containers"]
    assert container["command"][:2] == ["bash", "-c"]
    fake = tmp_path / "launchers"
    fake.mkdir(exist_ok=True)
    (fake / "torchrun.sh").write_text(f"exit {torchrun_rc}\n")
    script = container["command"][2].replace("/opt/stoker/launchers/torchrun.sh", str(fake / "torchrun.sh"))
    env = {"PATH": os.environ["PATH"], "JOB_COMPLETION_INDEX": str(rank)}
    p = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, timeout=30)
    return p.returncode, p.stderr


@pytest.mark.parametrize("name", CASES)
def test_node_0s_exit_code_is_the_verdict_and_a_worker_fails_only_its_index(
    name: str, tmp_path: Path
) -> None:
    spec = job_spec(name)
    # node 0: pass completes the Job (success policy), fail / bad input / incomplete end it at once
    assert spec["successPolicy"] == {"rules": [{"succeededIndexes": "0"}]}
    for rc, want in ((1, "FailJob"), (2, "FailJob"), (3, "FailJob")):
        got, _ = script_exit(name, 0, rc, tmp_path)
        assert got == rc and action(spec, got) == want
    assert script_exit(name, 0, 0, tmp_path)[0] == 0
    # a worker: set aside (torchrun.sh exits 0 there), done, or failed with any code
    assert script_exit(name, 1, 0, tmp_path)[0] == 0
    for rc in (1, 2, 3, 7):
        got, err = script_exit(name, 1, rc, tmp_path)
        assert got == 10 and action(spec, got) == "FailIndex"
        assert f"node 1 stopped with exit {rc}; node 0's report judges the run" in err
    # a container killed (OOM: 137) or a node taken away, whichever node: that index only
    assert action(spec, 137) == "FailIndex"
    assert action(spec, 143, disrupted=True) == "FailIndex"
    # nothing retries a pod into a finished world, and nothing but node 0 can end the Job early
    assert "backoffLimit" not in spec
    assert [r["action"] for r in spec["podFailurePolicy"]["rules"]].count("FailJob") == 1


def test_a_stopped_pod_passes_sigterm_on_to_the_run(tmp_path: Path) -> None:
    """bash as PID 1 has no default SIGTERM handler: the script forwards it, so a pod the Job
    stops (its deadline, node 0's pass ending the lingering workers) ends within its grace."""
    spec = job_spec("k8s-job-ib.yaml")
    (container,) = spec["template"]["spec"]["containers"]
    fake = tmp_path / "torchrun.sh"
    fake.write_text("trap 'exit 143' TERM\nsleep 30 & wait\n")
    script = container["command"][2].replace("/opt/stoker/launchers/torchrun.sh", str(fake))
    env = {"PATH": os.environ["PATH"], "JOB_COMPLETION_INDEX": "0"}
    p = subprocess.Popen(["bash", "-c", script], env=env, stderr=subprocess.PIPE, text=True)
    import time

    time.sleep(0.5)
    p.terminate()
    assert p.wait(timeout=10) == 143
