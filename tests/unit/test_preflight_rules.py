"""The preflight's rules beyond its last line: which stoker a node runs (set aside, not a
stopped job), the GPUs and NICs a node must have, the phase's place in the duration model,
the builders' commands, and mpirun.sh's smaller world without the hosts set aside."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from launchers.commands import preflight
from launchers.commands.fingerprint import digest
from launchers.plan import JobOptions, job_plan
from launchers.profiles import get_profile
from reports.shared import setaside as sa
from tests.conftest import REPO

A = "a" * 16
B = "b" * 16
PASS = "stoker preflight: {n} passed\n"


def test_a_node_with_another_stoker_is_set_aside_not_the_job_stopped() -> None:
    logs = {
        "n1": f"stoker fingerprint: n1 {A} /v/python\n" + PASS.format(n="n1"),
        "n2": f"stoker fingerprint: n2 {B} /opt/old/python\n" + PASS.format(n="n2"),
        "n3": PASS.format(n="n3"),  # an older stoker's preflight: no fingerprint line
    }
    got = sa.decide(["n1", "n2", "n3"], logs, digest=A)
    assert [s.host for s in got] == ["n2", "n3"]
    assert got[0].reason == (
        f"runs another stoker than the job's (stoker {B} at /opt/old/python; the job runs {A}): "
        "install the same stoker on every node, or on a file system every node sees"
    )
    assert got[1].reason.startswith(
        "runs another stoker than the job's (a stoker that prints no fingerprint;"
    )
    assert sa.decide(["n1", "n2", "n3"], logs) == []  # no digest given: the last line alone decides


def test_gpus_and_nics_short_of_the_promise() -> None:
    # hand-written inventory records in host.jsonl's shape (netbench/inventory/read.py)
    gpu = {"component": "host link", "device": "GPU0"}
    rdma = {"component": "network port", "device": "mlx5_0", "port": "1"}
    eth = {"component": "network port", "device": "eth0", "port": None}
    node = [{"component": "node"}, *[gpu] * 7, *[rdma] * 8, eth]
    assert preflight.short_of(node, 8, 8, "port") == "has 7 of the 8 GPUs the job runs on"
    assert preflight.short_of(node, 7, 9, "port") == "has 8 of the 9 RDMA ports the spec promises"
    assert preflight.short_of(node, 7, 9, "interface") == ""  # 8 RDMA + eth0: 9 interfaces
    assert preflight.short_of(node, None, None, "") == ""
    assert preflight.short_of([], 2, 1, "port") == (
        "has 0 of the 2 GPUs the job runs on and 0 of the 1 RDMA ports the spec promises"
    )


def test_what_a_node_must_have_comes_from_the_spec_and_the_job() -> None:
    # gpus_per_node 8; inter_node ib-ndr x 8 (50 GB/s a port)
    spec = str(REPO / "examples" / "spec-h100.yaml")
    assert preflight.promised(spec, 8) == (8, 8, "port")
    assert preflight.promised(spec, 0) == (None, 8, "port")  # a CPU job: no GPU count
    assert preflight.promised(None, 4) == (4, None, "")
    assert preflight.promised(None, 0) == (None, None, "")


def test_the_preflight_is_the_first_phase_of_the_duration_model() -> None:
    quick = get_profile("quick")
    cpu = job_plan(JobOptions(profile=quick, nodes=2, writers=2)).phases
    gpu = job_plan(JobOptions(profile=quick, nodes=256, gpus_per_node=8)).phases
    # start-up (13 s gloo, 20 s GPU) + 15 s of stoker check; limit 120 s at any N
    assert (cpu[0].name, cpu[0].expected_s, cpu[0].limit_s) == ("preflight", 28, 120)
    assert (gpu[0].name, gpu[0].expected_s, gpu[0].limit_s) == ("preflight", 35, 120)


def argv(*args: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-m", "launchers.local.argv", *args],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    ).stdout
    return out.split("\0")[:-1]


def test_the_builders_pass_the_spec_to_preflight_and_io() -> None:
    spec = str(REPO / "examples" / "spec-h100.yaml")
    got = argv(
        "preflight", "--gpus", "8", "--path", "/l", "--path", "/s", "--profile", "quick", "--spec", spec
    )
    assert got == [
        sys.executable,
        "-m",
        "launchers.cli",
        "preflight",
        "/l",
        "/s",
        "--gpus",
        "8",
        "--spec",
        spec,
    ]
    for launcher in ("torchrun", "mpirun"):
        io = argv(
            "--launcher", launcher, "--nnodes", "2", "io", "--path", "/l", "--out", "/o", "--spec", spec
        )
        assert io[io.index("--spec") + 1] == spec and io[-2:] == ["--out", "/o"]


# mpirun OPTIONS... PROGRAM: the preflight (sh -c ... LOG PYTHON -m launchers.cli preflight
# --node HOST ...) writes the answer the test gives HOST; every other call is noted with the
# hostfile it was given, and does nothing
FAKE_MPIRUN = r"""#!/bin/bash
hf= all="$*"
while [ $# -gt 0 ]; do
  case "$1" in
    --hostfile) hf=$2; shift 2 ;;
    -np|--npernode|--bind-to|-x|--mca) shift 2 ;;
    -*) shift ;;
    *) break ;;
  esac
done
if [ "$1" = sh ] && [[ " $* " == *" preflight "* ]]; then
  log=$4; host=$(awk '{print $1; exit}' "$hf")
  printf '%s\n' "stoker fingerprint: $host $FP_DIGEST /v/python" "$(cat "$ANSWERS/$host")" > "$log"
  exit 0
fi
echo "$(tr '\n' ' ' < "${hf:-/dev/null}")| $all" >> "$CALLS"
"""


def mpirun_sh(tmp_path: Path, answers: dict[str, str]) -> tuple[subprocess.CompletedProcess[str], Path]:
    bin_dir, ans, out = tmp_path / "bin", tmp_path / "answers", tmp_path / "out"
    bin_dir.mkdir()
    ans.mkdir()
    (bin_dir / "mpirun").write_text(FAKE_MPIRUN)
    (bin_dir / "mpirun").chmod(0o755)
    for host, line in answers.items():
        (ans / host).write_text(line)
    hosts = tmp_path / "hosts"
    hosts.write_text("".join(f"{h} slots=2\n" for h in answers))
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "PYTHONPATH": str(REPO),
        "STOKER_PY": sys.executable,
        "HOSTFILE": str(hosts),
        "NNODES": str(len(answers)),
        "NPROC_PER_NODE": "2",
        "OUT": str(out),
        "CUDA_VISIBLE_DEVICES": "",
        "ANSWERS": str(ans),
        "CALLS": str(tmp_path / "calls"),
        "FP_DIGEST": digest(REPO),
    }
    p = subprocess.run(
        ["bash", str(REPO / "launchers" / "mpirun.sh"), "--profile", "quick"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return p, out


def test_mpirun_goes_on_with_the_hosts_that_passed(tmp_path: Path) -> None:
    bad = "stoker preflight: h2 has 7 of the 8 GPUs the job runs on"
    p, out = mpirun_sh(tmp_path, {"h1": PASS.format(n="h1"), "h2": bad, "h3": PASS.format(n="h3")})
    assert "stoker: 2 of 3 nodes go on: h1,h3" in p.stdout, p.stdout + p.stderr
    assert "stoker: h2 set aside: " + bad in p.stderr
    assert [json.loads(x) for x in (out / "setaside.jsonl").read_text().splitlines()] == [
        {"host": "h2", "reason": bad}
    ]
    calls = (tmp_path / "calls").read_text().splitlines()
    # every step after the preflight runs on the two hosts left: their hostfile lines, 2 x 2 ranks
    assert calls and all(c.startswith("h1 slots=2 h3 slots=2 | ") for c in calls), calls
    net = [c for c in calls if " launchers.cli net " in c]
    assert len(net) == 3 and all(" -np 4 --npernode 2 " in c for c in net), net
    assert not (out / ".stoker-hostfile").exists()  # the launcher's own, removed


def test_mpirun_stops_when_the_first_host_is_set_aside(tmp_path: Path) -> None:
    p, out = mpirun_sh(
        tmp_path,
        {
            "h1": "stoker preflight: h1 storage path /x is not writable",
            "h2": PASS.format(n="h2"),
            "h3": PASS.format(n="h3"),
        },
    )
    assert p.returncode == 3, p.stdout + p.stderr
    assert "the first host h1 did not pass its preflight" in p.stderr
    assert not (tmp_path / "calls").exists()  # no step ran


def test_mpirun_stops_below_min_nodes(tmp_path: Path) -> None:
    p, _ = mpirun_sh(tmp_path, {"h1": PASS.format(n="h1"), "h2": "stoker preflight: h2 has 0 of the 8 GPUs"})
    assert p.returncode == 3, p.stdout + p.stderr
    assert "1 of 2 nodes passed the preflight, fewer than --min-nodes 2" in p.stderr


def test_stoker_set_aside_compares_with_its_own_stoker(tmp_path: Path) -> None:
    """The command (launchers/commands/setaside_cmd.py) takes the job's digest from the stoker it runs."""
    from argparse import Namespace

    from launchers.commands import setaside_cmd

    mine = digest(REPO)
    other = "0" * 16 if mine != "0" * 16 else "1" * 16
    (tmp_path / "preflight").mkdir()
    for node, d in (("n1", mine), ("n2", other)):
        text = f"stoker fingerprint: {node} {d} /v/python\n" + PASS.format(n=node)
        (tmp_path / "preflight" / f"{node}.log").write_text(text)
    assert setaside_cmd.main(Namespace(out=tmp_path, nodes="n1,n2", min_nodes=1)) == 0
    (line,) = (tmp_path / "setaside.jsonl").read_text().splitlines()
    assert json.loads(line)["host"] == "n2"
    assert json.loads(line)["reason"].startswith(
        f"runs another stoker than the job's (stoker {other} at /v/python"
    )
