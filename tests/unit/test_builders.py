"""Each command builder's exact tokens, computed by hand from its spec."""

from __future__ import annotations

import subprocess
import sys

import pytest

from launchers import builders as b
from launchers.profiles import get_profile

QUICK = get_profile("quick")
PROG = ("stoker", "net")


def test_net_argv_standalone() -> None:
    argv = b.net_argv(b.NetCommand(profile=QUICK, out="/r", scopes=("world",), nproc=2))
    assert argv == [
        "stoker",
        "net",
        "--ops",
        "all_reduce,all_gather,sendrecv",
        "--min-bytes",
        "64K",
        "--max-bytes",
        "4M",
        "--step-factor",
        "4",
        "--iters",
        "5",
        "--warmup",
        "2",
        "--backend",
        "auto",
        "--scopes",
        "world",
        "--timeout",
        "180",
        "--out",
        "/r",
        "--nproc",
        "2",
    ]


def test_net_argv_under_a_launcher_has_no_nproc() -> None:
    argv = b.net_argv(b.NetCommand(profile=QUICK, out="/r", scopes=("world", "inter-node"), backend="gloo"))
    assert "--nproc" not in argv
    assert argv[argv.index("--scopes") + 1] == "world,inter-node"
    assert argv[argv.index("--backend") + 1] == "gloo"


def test_io_argv_repeats_path() -> None:
    argv = b.io_argv(
        b.IoCommand(profile=QUICK, out="/r", paths=("/a", "/b"), stoker=("py", "-m", "launchers.cli"))
    )
    assert argv == [
        "py",
        "-m",
        "launchers.cli",
        "io",
        "--path",
        "/a",
        "--path",
        "/b",
        "--workloads",
        "checkpoint,dataloader,metadata",
        "--ckpt-bytes",
        "64M",
        "--runtime",
        "3",
        "--timeout",
        "180",
        "--out",
        "/r",
    ]


def test_report_argv() -> None:
    assert b.report_argv(b.ReportCommand(out="/r")) == ["stoker", "report", "/r"]
    assert b.report_argv(b.ReportCommand(out="/r", spec="/s.yaml", workload="/w.yaml")) == [
        "stoker",
        "report",
        "/r",
        "--spec",
        "/s.yaml",
        "--workload",
        "/w.yaml",
    ]


def test_srun_tokens() -> None:
    spec = b.SrunSpec(program=PROG, nodes=2, ntasks_per_node=8, time_limit_s=601, mpi="pmix")
    assert b.build("srun", spec) == [
        "srun",
        "--nodes=2",
        "--ntasks-per-node=8",
        "--ntasks=16",
        "--kill-on-bad-exit=1",
        "--time=11:00",
        "--mpi=pmix",
        "--label",
        "stoker",
        "net",
    ]


def test_srun_minimal() -> None:
    assert b.srun(b.SrunSpec(program=("hostname",), nodes=1, label=False)) == [
        "srun",
        "--nodes=1",
        "--ntasks-per-node=1",
        "--ntasks=1",
        "--kill-on-bad-exit=1",
        "hostname",
    ]


def test_torchrun_multi_node() -> None:
    spec = b.TorchrunSpec(
        program=PROG,
        nnodes=2,
        nproc_per_node=8,
        node_rank=1,
        master_addr="node0",
        master_port=29511,
        torchrun=("python", "-m", "torch.distributed.run"),
    )
    assert b.build("torchrun", spec) == [
        "python",
        "-m",
        "torch.distributed.run",
        "--nnodes=2",
        "--nproc-per-node=8",
        "--node-rank=1",
        "--master-addr=node0",
        "--master-port=29511",
        "--max-restarts=0",
        "--no-python",
        "stoker",
        "net",
    ]


def test_torchrun_single_node_is_standalone() -> None:
    assert b.torchrun(b.TorchrunSpec(program=PROG, nnodes=1, nproc_per_node=2)) == [
        "torchrun",
        "--nnodes=1",
        "--nproc-per-node=2",
        "--standalone",
        "--max-restarts=0",
        "--no-python",
        "stoker",
        "net",
    ]


def test_mpirun_tokens() -> None:
    spec = b.MpirunSpec(
        program=PROG,
        hostfile="hosts",
        nodes=2,
        procs_per_node=4,
        mca=(("btl_tcp_if_include", "lo"),),
        allow_run_as_root=True,
    )
    assert b.build("mpirun", spec) == [
        "mpirun",
        "--allow-run-as-root",
        "--hostfile",
        "hosts",
        "-np",
        "8",
        "--npernode",
        "4",
        "--bind-to",
        "none",
        "-x",
        "STOKER_RUN_ID",
        "--mca",
        "btl_tcp_if_include",
        "lo",
        "stoker",
        "net",
    ]


def test_local_tokens() -> None:
    assert b.build("local", b.LocalSpec(program=PROG)) == ["stoker", "net"]
    assert b.local(b.LocalSpec(program=PROG, time_limit_s=90)) == [
        "timeout",
        "--kill-after=30",
        "90",
        "stoker",
        "net",
    ]


def test_every_launcher_is_registered() -> None:
    assert sorted(b.LAUNCHERS) == ["local", "mpirun", "srun", "torchrun"]


@pytest.mark.parametrize(
    ("tokens", "line"),
    [
        (["a", "$OUT"], 'a "$OUT"'),
        (["a", "$OUT/io"], 'a "$OUT/io"'),
        (["a b", "$(rm -rf /)"], "'a b' '$(rm -rf /)'"),
        (["x;y", "$OUT;z"], "'x;y' '$OUT;z'"),
    ],
)
def test_shell_line_quotes_everything_but_script_variables(tokens: list[str], line: str) -> None:
    assert b.shell_line(tokens) == line


def test_script_argv_wraps_the_phase_in_the_launcher() -> None:
    args = [
        "--launcher",
        "torchrun",
        "--nnodes",
        "3",
        "--nproc-per-node",
        "2",
        "--node-rank",
        "2",
        "--master-addr",
        "10.0.0.1",
        "--master-port",
        "29600",
        "net",
        "--profile",
        "quick",
        "--scopes",
        "pairs",
        "--out",
        "/r",
    ]
    p = subprocess.run(
        [sys.executable, "-m", "launchers.local.argv", *args], capture_output=True, text=True, check=True
    )
    tokens = p.stdout.split("\0")[:-1]
    assert tokens[:10] == [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nnodes=3",
        "--nproc-per-node=2",
        "--node-rank=2",
        "--master-addr=10.0.0.1",
        "--master-port=29600",
        "--max-restarts=0",
        "--no-python",
    ]
    assert tokens[10:14] == [sys.executable, "-m", "launchers.cli", "net"]
    assert tokens[tokens.index("--scopes") + 1] == "pairs"


def _argv_tokens(*args: str) -> list[str]:
    p = subprocess.run(
        [sys.executable, "-m", "launchers.local.argv", *args], capture_output=True, text=True, check=True
    )
    return p.stdout.split("\0")[:-1]


def test_compute_budget_reaches_the_compute_phase_and_its_limit() -> None:
    assert b.compute_argv(b.ComputeCommand(out="/r", profile="quick")) == [
        *b.STOKER, "compute", "--profile", "quick", "--out", "/r"
    ]  # fmt: skip
    assert b.compute_argv(b.ComputeCommand(out="/r", profile="quick", budget_s=2.5))[-4:] == [
        "--budget", "2.5", "--out", "/r"
    ]  # fmt: skip
    # the profile's limit without a budget; a budget's own, with the same 180 s of start-up room
    assert b.compute_limit_s("standard", None) == b.COMPUTE_LIMIT_S["standard"]
    assert b.compute_limit_s("full", 2.5) == 2 + 1 + 120 + 60
    # torchrun.sh and mpirun.sh: `compute` tokens, and the limit as the fifth `limits` value
    assert _argv_tokens("compute", "--profile", "quick", "--compute-budget", "3", "--out", "/r")[-7:] == [
        "compute", "--profile", "quick", "--budget", "3", "--out", "/r"
    ]  # fmt: skip
    assert _argv_tokens("limits", "--profile", "quick", "--compute-budget", "3")[4] == str(3 + 1 + 180)
    under = _argv_tokens("--launcher", "mpirun", "--nnodes", "2", "compute", "--out", "/r")
    assert under[0] == "mpirun" and under[-3:] == ["standard", "--out", "/r"]


@pytest.mark.parametrize("bad", ["0", "-1", "1e9"])
def test_compute_budget_out_of_range_is_one_line_exit_2(bad: str) -> None:
    p = subprocess.run(
        [sys.executable, "-m", "launchers.local.argv", "compute", "--compute-budget", bad, "--out", "/r"],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.count("\n") == 1 and "--compute-budget" in p.stderr, p.stderr


def test_save_repeats_reach_stoker_io_and_0_is_fio_alone() -> None:
    at = ("io", "--profile", "quick", "--path", "/p", "--out", "/r")
    assert "--save-repeats" not in _argv_tokens(*at) and "--no-torch" not in _argv_tokens(*at)
    assert _argv_tokens(*at, "--save-repeats", "3") == _argv_tokens(*at)  # stoker io's own default
    assert _argv_tokens(*at, "--save-repeats", "0")[-3:] == ["--no-torch", "--out", "/r"]
    assert _argv_tokens(*at, "--save-repeats", "5")[-4:] == ["--save-repeats", "5", "--out", "/r"]


@pytest.mark.parametrize("bad", ["-1", "101"])
def test_save_repeats_out_of_range_is_one_line_exit_2(bad: str) -> None:
    argv = ["io", "--path", "/p", "--save-repeats", bad, "--out", "/r"]
    p = subprocess.run([sys.executable, "-m", "launchers.local.argv", *argv], capture_output=True, text=True)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.count("\n") == 1 and "--save-repeats" in p.stderr, p.stderr
