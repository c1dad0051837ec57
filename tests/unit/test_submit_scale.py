"""`stoker submit` at scale: the spec's storage measured on its own paths, limits and the
expected duration that grow with the nodes, the shared file system's cap, the fabric's
variables, the same stoker on every node, and a failed submit that leaves its dir usable."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from launchers.duration import sweep_s
from launchers.plan import JobOptions, job_plan, job_sizes, shard_bytes
from launchers.profiles import get_profile
from launchers.slurm.sbatch import SbatchConfig, render
from tests.conftest import DATA
from tests.unit.test_sbatch import FAKE_SCONTROL, FAKE_SRUN

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "examples" / "spec-h100.yaml"
GOLDEN = DATA / "launchers"
BIG = SbatchConfig(
    nodes=256,
    ranks_per_node=8,
    gpus_per_node=8,
    profile=get_profile("standard"),
    out="/lustre/acceptance",
    spec="/lustre/acceptance/spec.yaml",
    local_path="/scratch",
    shared_path="/data",
    more_shared=("/lustre/datasets",),
    local_GBps=6.0,
    shared_GBps=20.0,
    fabric="ib",
)


def submit(tmp_path: Path, *args: str, path: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if path is not None:
        env["PATH"] = path
    return subprocess.run(
        [sys.executable, "-m", "launchers.cli", "submit", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_256_node_golden() -> None:
    got = render(BIG).splitlines()
    want = (GOLDEN / "256-node-standard-ib.sbatch").read_text(encoding="utf-8").splitlines()
    for n, (g, w) in enumerate(zip(got, want), 1):
        assert g == w, f"line {n} differs"
    assert len(got) == len(want)


def test_dry_run_with_the_shipped_spec_measures_data_and_scratch(tmp_path: Path) -> None:
    p = submit(tmp_path, "--dry-run", "--spec", str(SPEC), "--nodes", "4", "--gpus-per-node", "8")
    assert p.returncode == 0, p.stderr
    assert "\nLOCAL_IO=/scratch\n" in p.stdout and "\nSHARED_IO=/data\n" in p.stdout
    (io,) = [line for line in p.stdout.splitlines() if line.startswith("until phase storage ")]
    assert ' --path "$LOCAL_IO" --path "$SHARED_IO" ' in io
    assert p.stderr == ""  # 8 GPUs, 4 nodes: every promise of the spec is measurable


def test_a_promise_the_job_cannot_measure_is_one_warning_line(tmp_path: Path) -> None:
    p = submit(tmp_path, "--dry-run", "--spec", str(SPEC), "--nodes", "1")
    assert p.returncode == 0
    (line,) = p.stderr.splitlines()
    assert line.startswith("stoker submit: warning: this job cannot measure the spec's ")
    assert "8 GPUs per node" in line and "inter-node" in line and "shared storage" in line


def test_every_promise_its_own_path_and_the_options_beside_them(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "name: two-shared\nstorage:\n"
        "  - {path: /data, kind: shared, write_GBps: 20}\n"
        "  - {path: /home, kind: shared, write_GBps: 2}\n"
        "  - {path: /scratch, kind: local, write_GBps: 6}\n"
    )
    p = submit(tmp_path, "--dry-run", "--spec", str(spec), "--nodes", "2", "--local-path", "/nvme")
    assert p.returncode == 0, p.stderr
    assert "\nLOCAL_IO=/nvme\n" in p.stdout and "\nSHARED_IO=/data\n" in p.stdout
    (io,) = [line for line in p.stdout.splitlines() if line.startswith("until phase storage ")]
    assert ' --path "$LOCAL_IO" --path "$SHARED_IO" --path /scratch --path /home ' in io


def test_limit_and_expected_duration_grow_with_the_nodes(tmp_path: Path) -> None:
    def job(n: int) -> str:
        p = submit(tmp_path, "--dry-run", "--nodes", str(n), "--gpus-per-node", "8")
        assert p.returncode == 0, p.stderr
        return p.stdout

    def seconds(text: str) -> int:
        h, m, s = re.search(r"#SBATCH --time=(\d+):(\d+):(\d+)", text).groups()  # type: ignore[union-attr]
        return int(h) * 3600 + int(m) * 60 + int(s)

    four, big = job(4), job(256)
    assert seconds(big) > seconds(four)
    assert "# expected duration at 256 node(s), profile standard" in big
    assert re.search(r"^#   groups +~ +\d+m\d\ds  \(limit \d+m\d\ds\)$", big, re.M)
    assert re.search(r"^#   total +~ +\d+m\d\ds$", big, re.M)


def test_shared_file_system_cap() -> None:
    std = get_profile("standard")
    # 4 nodes x 8 writers x 4 GiB = 128 GiB: under the 1 TiB cap, the profile's shard
    assert shard_bytes(std, 4, 8) == 4 << 30
    # 256 x 8 writers: 1 TiB / 2048 = 512 MiB per writer
    assert shard_bytes(std, 256, 8) == 512 << 20
    # 4096 x 8: 32 MiB would fit; the floor is 64 MiB
    assert shard_bytes(std, 4096, 8) == 64 << 20
    (io,) = [x for x in render(BIG).splitlines() if x.startswith("until phase storage ")]
    assert " --ckpt-bytes 512M " in io


def test_sweep_model_by_hand() -> None:
    quick = get_profile("quick")
    # 64K, 256K, 1M, 4M: 65,536 + 262,144 + 1,048,576 + 4,194,304 = 5,570,560 B; x2 through the bus, 3 ops, 5 + 2 iterations, at 1 GB/s
    sizes = job_sizes(JobOptions(profile=quick, nodes=2), 2)
    assert sizes.message_bytes == (64 << 10, 256 << 10, 1 << 20, 4 << 20)
    assert abs(sweep_s(sizes, 1.0) - 3 * 7 * 2 * 5_570_560 / 1e9) < 1e-9


def test_model_against_the_beds_measured_phases() -> None:
    """The Slurm bed (2 nodes on a 2-core machine, gloo, quick, 2 writers a node; README):
    intra-node 15 s, inter-node 14 s, pairs 13 s, storage 76 s. The model within 30 %."""
    job = JobOptions(profile=get_profile("quick"), nodes=2, writers=2)
    got = {p.name: p.expected_s for p in job_plan(job).phases}
    for name, measured in (("intra-node", 15), ("inter-node", 14), ("pairs", 13), ("storage", 76)):
        assert abs(got[name] - measured) <= 0.3 * measured, (name, got[name])


def test_fabric_variables_are_exported_unless_set() -> None:
    text = render(BIG)
    assert '\nexport NCCL_IB_DISABLE="${NCCL_IB_DISABLE:-0}"\n' in text
    plain = render(
        SbatchConfig(nodes=2, ranks_per_node=2, gpus_per_node=0, profile=get_profile("quick"), out="/r")
    )
    assert "export NCCL_" not in plain


A = "aaaaaaaaaaaaaaaa"
B = "bbbbbbbbbbbbbbbb"


@pytest.mark.parametrize(
    ("lines", "stops"),
    [
        ([f"n1 {A} /v/python", f"n2 {B} /v/python"], True),  # another stoker on n2
        ([f"n1 {A} /v/python"], True),  # n2 answered nothing
        # srun's own warning among the answers is not a node's answer
        (
            [
                "srun: Warning: cannot honor --cpu-bind on n2, setting it to none",
                f"n1 {A} /v/python",
                f"n2 {A} /v/python",
            ],
            False,
        ),
    ],
)
def test_a_node_with_another_stoker_stops_the_job_before_any_sweep(
    lines: list[str], stops: bool, tmp_path: Path
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    echo = "; ".join(f"echo '{x}'" for x in lines)
    fake = f'#!/bin/sh\n[ "$1" = fingerprint ] && {{ {echo}; exit 0; }}\n'
    fake += '[ "$1" = set-aside ] && { echo n1,n2; exit 0; }\nexit 0\n'  # both passed the preflight
    for name, text in (("srun", FAKE_SRUN), ("scontrol", FAKE_SCONTROL), ("stoker", fake)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    cfg = SbatchConfig(
        nodes=2,
        ranks_per_node=2,
        gpus_per_node=0,
        profile=get_profile("quick"),
        out=str(tmp_path / "out"),
        local_path=str(tmp_path / "local"),
        stoker=("stoker",),
    )
    script = tmp_path / "job.sbatch"
    script.write_text(render(cfg), encoding="utf-8")
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "SLURM_JOB_ID": "7", "SLURM_JOB_NODELIST": "n1"}
    p = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=60)
    if stops:
        assert p.returncode == 2
        (line,) = p.stderr.splitlines()
        assert line.startswith("stoker: not the same stoker on all 2 nodes")
        assert not (tmp_path / "out" / "phase-inventory.log").exists()
    else:
        assert "not the same stoker" not in p.stderr and (tmp_path / "out" / "phase-inventory.log").exists()


def test_a_failed_submit_leaves_its_dir_usable(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sbatch").write_text("#!/bin/sh\necho 'sbatch: error: invalid partition' >&2\nexit 1\n")
    (bin_dir / "sbatch").chmod(0o755)
    path = f"{bin_dir}:{os.environ['PATH']}"
    for _ in range(2):  # the second submit into the same dir meets sbatch again, not a refusal
        p = submit(
            tmp_path, "--nodes", "2", "--out", "r", "--spec", str(SPEC), "--gpus-per-node", "8", path=path
        )
        assert p.returncode == 2
        assert (
            p.stderr.strip().splitlines()[-1]
            == "stoker submit: sbatch refused the job: sbatch: error: invalid partition"
        )


def argv_tokens(*args: str) -> list[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run(
        [sys.executable, "-m", "launchers.local.argv", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert p.returncode == 0, p.stderr
    return p.stdout.split("\0")


def test_torchrun_and_mpirun_limits_follow_the_same_model() -> None:
    # up to 2 nodes: the standard profile's own net / io limits, 600 s and 900 s
    assert argv_tokens("--nnodes", "2", "--gpus-per-node", "8", "limits", "--profile", "standard")[:2] == [
        "600",
        "900",
    ]
    big = argv_tokens("--nnodes", "256", "--gpus-per-node", "8", "limits", "--profile", "standard")
    assert int(big[0]) > 600 and int(big[1]) > 900
    # a phase's own --timeout is the sbatch job's for the same N, phase and profile
    net = argv_tokens(
        "--launcher",
        "torchrun",
        "--nnodes",
        "256",
        "--gpus-per-node",
        "8",
        "--nproc-per-node",
        "8",
        "--master-addr",
        "a",
        "net",
        "--scopes",
        "groups",
        "--out",
        "/o",
        "--profile",
        "standard",
    )
    sbatch = render(replace(BIG, spec=None, more_shared=(), local_GBps=None, shared_GBps=None, fabric=None))
    (groups,) = [x for x in sbatch.splitlines() if x.startswith("until across groups ")]
    timeout = net[net.index("--timeout") + 1]
    assert f" --timeout {timeout} " in groups


def test_the_storage_model_counts_the_saves_stoker_io_makes() -> None:
    """launchers.duration mirrors iobench's save repeats and kinds (it stays free of iobench)."""
    from iobench.torch_ckpt import BACKENDS
    from iobench.workloads import IoSettings
    from launchers.duration import SAVE_KINDS, node_bytes
    from launchers.profiles import SAVE_REPEATS

    assert (SAVE_REPEATS, SAVE_KINDS) == (IoSettings().save_repeats, BACKENDS)
    # 2 writers of 64 MiB: fio writes and reads 2 x 2 x 64 MiB = 256 MiB; each of 2 kinds saves
    # 3 x (32 + 64) MiB by one process, then by 2: 2 x 3 x 96 x 3 = 1,728 MiB; 1,984 MiB in all
    assert node_bytes(2, 64 << 20) == 1984 << 20
    # --save-repeats 0: fio's 256 MiB alone; 1: 256 + 2 x 1 x 96 x 3 = 832 MiB
    assert (node_bytes(2, 64 << 20, 0), node_bytes(2, 64 << 20, 1)) == (256 << 20, 832 << 20)
