"""`stoker submit --platform k8s|skypilot|dstack` at the edges: bad input is one line and
exit 2; the platform's client gets exactly the rendered YAML (a scripted fake client on
PATH records what it was given); the scripts' world-size checks stop before any sweep."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.conftest import PYTHON, REPO, STOKER

K8S = ["submit", "--platform", "k8s", "--nodes", "2", "--gpus-per-node", "8", "--profile", "quick"]


def stoker(*args: str, path: str | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **({"PATH": path} if path is not None else {})}
    return subprocess.run([*STOKER, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=60)


@pytest.mark.parametrize(
    "args,needle",
    [
        (K8S, "needs --image"),
        ([*K8S, "--image", "x", "--job-name", "Bad_Name"], "--job-name 'Bad_Name'"),
        ([*K8S, "--image", "x", "--kind", "mpijob"], "--kind mpijob needs --results-volume"),
        ([*K8S, "--image", "x", "--node-selector", "novalue"], "use KEY=VALUE"),
        ([*K8S, "--image", "x", "--fabric", "nvlink"], "invalid choice"),
        ([*K8S, "--image", "x", "--fabric-resource", "rdma/shared_ib"], "use NAME=COUNT"),
        ([*K8S, "--image", "x", "--fabric-resource", "shared_ib=1"], "use NAME=COUNT"),
        (
            [*K8S, "--image", "x", "--fabric", "efa", "--instance-type", "p3.2xlarge"],
            "vpc.amazonaws.com/efa=N",
        ),
        ([*K8S, "--image", "x", "--fabric", "tcp", "--device-plugin", "hostdev"], "has no devices"),
        (
            [*K8S, "--image", "x", "--fabric", "ib", "--device-plugin", "aws-efa"],
            "use coreweave, rdma-shared",
        ),
        ([*K8S, "--image", "x", "--local-volume", "/mnt/nvme"], "use hostpath:/DIR"),
        (
            [
                "submit",
                "--platform",
                "dstack",
                "--nodes",
                "2",
                "--image",
                "x",
                "--local-volume",
                "ephemeral:l",
            ],
            "dstack mounts hostpath:/DIR only",
        ),
        (
            # --image is the Slurm job's too (pyxis); the namespace is not
            ["submit", "--nodes", "2", "--namespace", "x", "--dry-run"],
            "--namespace applies to --platform k8s|skypilot|dstack",
        ),
    ],
)
def test_bad_input_is_one_line_exit_2(args: list[str], needle: str) -> None:
    p = stoker(*args, "--dry-run")
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and needle in p.stderr, p.stderr


def test_without_the_client_says_which_to_install(tmp_path: Path) -> None:
    for platform, client in (("k8s", "kubectl"), ("skypilot", "sky"), ("dstack", "dstack")):
        p = stoker("submit", "--platform", platform, "--nodes", "2", "--image", "x", path=str(tmp_path))
        # the line saying the fabric is not known (no --spec, no --fabric), the one saying the results
        # die with the pod (no --results-volume), then the refusal
        assert p.returncode == 2 and p.stderr.count("\n") == 3, p.stderr
        assert p.stderr.startswith("stoker submit: warning: the fabric is not known (no --spec)")
        assert f"{client} not found on PATH" in p.stderr.splitlines()[-1] and "--dry-run" in p.stderr


def fake_client(bin_dir: Path, name: str, log: Path) -> None:
    """A client that records its arguments and its stdin (or the file it was given)."""
    bin_dir.mkdir(exist_ok=True)
    exe = bin_dir / name
    exe.write_text(
        f'#!/bin/bash\nprintf "%s\\n" "$@" > {log}.args\n'
        f'for a in "$@"; do [ -f "$a" ] && cp "$a" {log}.file; done\n'
        f'[ "$1" = apply ] && [ "$3" = - ] && cat > {log}.file\nexit 0\n'
    )
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)


@pytest.mark.parametrize(
    "platform,client,argv",
    [
        ("k8s", "kubectl", ["apply", "-f", "-"]),
        ("skypilot", "sky", ["launch", "--yes", "--cluster", "stoker-t"]),
        ("dstack", "dstack", ["apply", "--yes", "-f"]),
    ],
)
def test_applies_the_rendered_yaml_with_the_client(
    tmp_path: Path, platform: str, client: str, argv: list[str]
) -> None:
    log = tmp_path / "client"
    fake_client(tmp_path / "bin", client, log)
    common = ["submit", "--platform", platform, "--nodes", "2", "--image", "img:1", "--job-name", "stoker-t"]
    p = stoker(*common, path=f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    assert p.returncode == 0, p.stderr
    assert "stoker-summary line" in p.stdout  # no --results-volume: the answer is in node 0's log
    assert log.with_suffix(".args").read_text().splitlines()[: len(argv)] == argv
    dry = stoker(*common, "--dry-run")
    assert log.with_suffix(".file").read_text() == dry.stdout
    assert list(yaml.safe_load_all(dry.stdout))


@pytest.mark.parametrize(
    "script,env,needle",
    [
        (
            "torchrun.sh",
            {"NNODES": "1", "STOKER_EXPECT_NODES": "2"},
            "joined a world of 1 node(s) but the job asked for 2",
        ),
        ("torchrun.sh", {"NNODES": "2", "NODE_RANK": "2", "STOKER_EXPECT_NODES": "2"}, "outside 0..1"),
        ("mpirun.sh", {"NNODES": "2", "STOKER_EXPECT_NODES": "2"}, "(1 in"),
    ],
)
def test_scripts_refuse_a_world_of_the_wrong_size(
    tmp_path: Path, script: str, env: dict[str, str], needle: str
) -> None:
    hosts = tmp_path / "hosts"
    hosts.write_text("# the operator's hostfile\nnode0 slots=2\n")
    # SYNC_TIMEOUT 1: no node 0 runs here, so a bad node 1 waits for its claim that long at most
    full = {
        **os.environ,
        "STOKER_PY": PYTHON,
        "OUT": str(tmp_path / "out"),
        "HOSTFILE": str(hosts),
        "SYNC_TIMEOUT": "1",
        **env,
    }
    p = subprocess.run(
        ["bash", str(REPO / "launchers" / script), "--profile", "quick"],
        env=full,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and needle in p.stderr, p.stderr
    # stopped before anything ran: OUT holds at most this node's one-line note for node 0
    out = tmp_path / "out"
    assert not out.exists() or all(f.name.startswith(".stoker-bad-node.") for f in out.iterdir())


def test_summary_line_counts_findings_and_takes_the_run_exit_code(tmp_path: Path) -> None:
    from launchers.local.summary import summary

    verdict = {
        "verdict": "pass",
        "run_id": "r1",
        "findings": [
            {"status": "ok", "hosts": ["b", "a"]},
            {"status": "ok", "hosts": ["a"]},
            {"status": "no_data", "hosts": None},
        ],
    }
    assert summary(verdict, 0, []) == {
        "verdict": "pass",
        "exit": 0,
        "run_id": "r1",
        "aborted": [],
        "findings": {"no_data": 1, "ok": 2},
        "hosts": ["a", "b"],
    }
    assert summary(verdict, 0, ["pairs"])["exit"] == 3  # a phase aborted, the rest passed
    assert summary({**verdict, "verdict": "fail"}, 1, ["pairs"])["exit"] == 1
    assert summary(None, 2, [])["verdict"] is None
    p = subprocess.run(
        [PYTHON, "-m", "launchers.local.summary", str(tmp_path), "2"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert p.stdout.startswith('stoker-summary {"verdict": null, "exit": 2,')


@pytest.mark.parametrize(
    "args,limits",
    [
        (["--fabric", "ib", "--fabric-resource", "rdma/shared_ib=1"], {"rdma/shared_ib": 1}),
        (["--fabric", "ib", "--device-plugin", "rdma-shared"], {"rdma/rdma_shared_device_a": 1}),
        (["--fabric", "ib", "--device-plugin", "hostdev"], {"nvidia.com/hostdev": 8}),
        (["--fabric", "efa", "--instance-type", "p5en.48xlarge"], {"vpc.amazonaws.com/efa": 16}),
        (["--fabric", "efa", "--instance-type", "p4d.24xlarge"], {"vpc.amazonaws.com/efa": 4}),
        (["--fabric", "roce", "--networks", "sriov-a,sriov-b"], {"nvidia.com/sriov_rdma_vf": 2}),
    ],
)
def test_fabric_devices_from_the_command_line(args: list[str], limits: dict[str, int]) -> None:
    p = stoker(*K8S, "--image", "x", *args, "--local-volume", "hostpath:/mnt/nvme", "--dry-run")
    assert p.returncode == 0, p.stderr
    job = [d for d in yaml.safe_load_all(p.stdout) if d["kind"] == "Job"][0]
    pod = job["spec"]["template"]["spec"]
    got = pod["containers"][0]["resources"]["limits"]
    assert {
        k: v for k, v in got.items() if k not in ("nvidia.com/gpu", "cpu", "memory", "hugepages-2Mi")
    } == limits
    local = [v for v in pod["volumes"] if v["name"] == "local"][0]
    assert local["hostPath"] == {"path": "/mnt/nvme", "type": "DirectoryOrCreate"}
    env = {e["name"]: e["value"] for e in pod["containers"][0]["env"]}
    assert env["LOCAL_IO"] == "/stoker-local/stoker-io"  # the storage test's local path: the node's disk


def test_nodes_is_required_except_for_the_check_daemonset() -> None:
    # a DaemonSet runs on every node: --kind check takes no node count; every job does
    p = stoker("submit", "--platform", "k8s", "--kind", "check", "--image", "img:1", "--dry-run")
    assert p.returncode == 0 and "kind: DaemonSet" in p.stdout, p.stderr
    for platform in ("slurm", "k8s"):
        p = stoker("submit", "--platform", platform, "--image", "img:1", "--dry-run")
        assert p.returncode == 2 and p.stderr.strip() == (
            "stoker submit: --nodes N is required: the number of nodes the job tests"
        ), p.stderr
