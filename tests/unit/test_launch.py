"""Pure logic of `stoker run` and `stoker submit`: profiles, GPU count, the phase plan,
exit codes, the summary; and submit's command line (dry run, no sbatch)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from launchers.commands.run_cmd import plan
from launchers.local.local_session import count_gpus, kfd_gpus, summary
from launchers.local.phases import PhaseResult, exit_code
from launchers.profiles import PROFILES, default_profile, get_profile, with_overrides
from reports.shared.errors import UsageError
from reports.shared.units import parse_size
from tests.conftest import STOKER


def test_profiles_grow_from_quick_to_full() -> None:
    q, s, f = (PROFILES[n] for n in ("quick", "standard", "full"))
    for key in ("max_bytes", "ckpt_bytes"):
        assert parse_size(getattr(q, key)) < parse_size(getattr(s, key)) < parse_size(getattr(f, key))
    assert q.iters < s.iters < f.iters
    assert set(q.ops) <= set(s.ops) <= set(f.ops)


def test_unknown_profile_is_usage_error() -> None:
    with pytest.raises(UsageError, match="quick, standard, full"):
        get_profile("huge")


def test_overrides_apply_only_when_given() -> None:
    q = get_profile("quick")
    assert with_overrides(q, iters=None) is q
    o = with_overrides(q, iters=9, max_bytes="1M")
    assert (o.iters, o.max_bytes, o.min_bytes) == (9, "1M", q.min_bytes)


def test_default_profile() -> None:
    assert default_profile(0) == "quick"
    assert default_profile(8) == "standard"


@pytest.mark.parametrize(
    ("devs", "env", "n"),
    [
        (["nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm", "null"], {}, 2),
        (["null", "sda"], {}, 0),
        (["nvidia0", "nvidia1"], {"CUDA_VISIBLE_DEVICES": "1"}, 1),
        (["nvidia0"], {"CUDA_VISIBLE_DEVICES": ""}, 0),
        (["nvidia0"], {"CUDA_VISIBLE_DEVICES": "-1"}, 0),
    ],
)
def test_count_gpus(devs: list[str], env: dict[str, str], n: int) -> None:
    assert count_gpus(devs, env) == n


# KFD topology node `properties` files, hand-written in the amdgpu driver's format ("name value"
# per line; /sys/class/kfd/kfd/topology/nodes/N/properties): node 0 the CPU agent (no SIMDs),
# then MI300X GPU agents (304 SIMDs each)
_KFD_CPU = "cpu_cores_count 64\nsimd_count 0\nmem_banks_count 1\n"
_KFD_GPU = "cpu_cores_count 0\nsimd_count 304\nmem_banks_count 1\ngfx_target_version 90402\nvendor_id 4098\n"


def test_an_amd_node_counts_its_gpus_from_the_rocm_driver() -> None:
    amd = kfd_gpus([_KFD_CPU, *[_KFD_GPU] * 8])
    assert amd == 8
    assert count_gpus(["kfd", "dri", "null"], {}, amd) == 8  # RCCL ranks, never gloo on the CPUs
    assert count_gpus(["kfd", "dri"], {"HIP_VISIBLE_DEVICES": "0,1"}, amd) == 2
    assert count_gpus(["kfd", "dri"], {"ROCR_VISIBLE_DEVICES": "3"}, amd) == 1
    assert count_gpus(["null"], {}, amd) == 0  # no /dev/kfd: no AMD GPU this process can open
    assert kfd_gpus([_KFD_CPU]) == 0


def test_plan_runs_net_io_report_into_one_dir() -> None:
    q = get_profile("quick")
    phases = plan(
        profile=q,
        out="/r",
        io_path="/r/.io",
        nproc=2,
        backend="auto",
        spec="/s.yaml",
        workload=None,
        stoker=("stoker",),
    )
    assert [p.name for p in phases] == ["inventory", "compute", "network", "storage", "report"]
    inventory, compute, net, io, report = (list(p.argv) for p in phases)
    assert inventory == ["stoker", "inventory", "--out", "/r"] and phases[0].limit_s == 120
    assert compute == ["stoker", "compute", "--profile", "quick", "--out", "/r"] and phases[1].limit_s == 200
    assert net[:2] == ["stoker", "net"] and net[-4:] == ["--out", "/r", "--nproc", "2"]
    assert io[:4] == ["stoker", "io", "--path", "/r/.io"] and io[-2:] == ["--out", "/r"]
    assert report == ["stoker", "report", "/r", "--spec", "/s.yaml"]
    # the launcher's limit is past stoker's own --timeout (180 s in quick)
    assert phases[2].limit_s == 240 and phases[4].limit_s == q.report_timeout_s


def test_plan_of_one_rank_has_no_network_phase() -> None:
    phases = plan(
        profile=get_profile("quick"),
        out="/r",
        io_path="/r/.io",
        nproc=1,
        backend="auto",
        spec=None,
        workload=None,
        stoker=("stoker",),
        gpus=1,
    )
    assert [p.name for p in phases] == ["inventory", "compute", "storage", "report"]
    assert phases[2].argv[-4:] == ("--writers", "1", "--out", "/r")  # one checkpoint shard per GPU


@pytest.mark.parametrize(
    ("report_rc", "written", "aborted", "want"),
    [
        (0, True, False, 0),
        (1, True, False, 1),
        (1, True, True, 1),  # a fail verdict stays a fail
        (0, True, True, 3),  # passed on what was measured, but a phase is missing
        (2, False, True, 3),
        (2, False, False, 2),
        (3, True, False, 3),  # the report itself found a phase that wrote no records
        (70, False, False, 70),  # a report that crashed is never a pass
    ],
)
def test_exit_code(report_rc: int, written: bool, aborted: bool, want: int) -> None:
    assert exit_code(report_rc, written, aborted) == want


def test_summary_table() -> None:
    results = [
        PhaseResult(name="network", rc=0, elapsed_s=12.34),
        PhaseResult(name="storage", rc=124, elapsed_s=240.0),
    ]
    verdict = {
        "verdict": "fail",
        "run_id": "r1",
        "findings": [
            {
                "component": "local storage",
                "check": "checkpoint_write",
                "status": "below_spec",
                "measured": 0.5,
                "expected": 6.0,
                "unit": "GB/s",
            }
        ],
    }
    text = summary(results, verdict, Path("/r"))
    assert "network  ok        12.3" in text
    assert "storage  exit 124  240.0" in text
    assert "local storage  checkpoint_write  below_spec  0.5       6         GB/s" in text
    assert "verdict: FAIL  (run r1)" in text
    assert "verdict: none" in summary(results, None, Path("/r"))


def test_summary_lists_only_the_files_written(tmp_path: Path) -> None:
    results = [PhaseResult(name="report", rc=70, elapsed_s=1.0)]
    assert summary(results, None, tmp_path).endswith(f"results: {tmp_path}  (no report files were written)")
    (tmp_path / "verdict.json").write_text("{}")
    verdict = {
        "verdict": "unjudged",
        "headline": "UNJUDGED — nothing was judged: 2 checks had no reference",
        "run_id": "r2",
    }
    text = summary(results, verdict, tmp_path)
    assert text.endswith(f"results: {tmp_path}  (verdict.json)") and "report.md" not in text
    assert (
        "verdict: UNJUDGED — nothing was judged: 2 checks had no reference  (run r2)" in text
        and "PASS" not in text
    )


def _stoker(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*STOKER, *args], capture_output=True, text=True, env=env, cwd=cwd)


def test_submit_dry_run_prints_the_script(tmp_path: Path) -> None:
    p = _stoker("submit", "--nodes", "2", "--profile", "quick", "--dry-run", "--out", str(tmp_path / "r"))
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("#!/bin/bash\n")
    assert "#SBATCH --nodes=2\n" in p.stdout and "--scopes pairs" in p.stdout
    assert f"OUT={tmp_path / 'r'}\n" in p.stdout
    assert not (tmp_path / "r").exists()  # a dry run writes nothing


def test_submit_dry_run_reads_the_spec_from_the_results_dir(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text("name: t\ngpus_per_node: 8\n")
    out = tmp_path / "r"
    p = _stoker("submit", "--nodes", "2", "--dry-run", "--spec", str(spec), "--out", str(out))
    assert p.returncode == 0, p.stderr
    # the job runs on other hosts: it reads the copy on the shared results dir, never the submit host's file
    assert f"--spec {out / 'spec.yaml'}" in p.stdout and f"--spec {spec}" not in p.stdout
    assert (out / "spec.yaml").read_text() == spec.read_text()
    assert (out / ".stoker-run").read_text().strip() == "(submitted)"  # the job claims it


def test_submit_without_sbatch_is_one_line_exit_2(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": str(tmp_path)}  # nothing on PATH
    p = _stoker("submit", "--nodes", "2", env=env, cwd=tmp_path)
    assert p.returncode == 2
    assert p.stderr.count("\n") == 1 and "sbatch not found" in p.stderr


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--nodes", "0"], "--nodes must be at least 1"),
        (["--nodes", "2", "--spec", "/no/such.yaml"], "no such file"),
        (["--nodes", "2", "--max-bytes", "lots"], "bad --max-bytes"),
        (["--nodes", "2", "--profile", "huge"], "invalid choice"),
    ],
)
def test_submit_bad_input(args: list[str], words: str) -> None:
    p = _stoker("submit", "--dry-run", *args)
    assert p.returncode == 2 and words in p.stderr and p.stderr.count("\n") == 1


def test_run_bad_path_is_one_line_exit_2(tmp_path: Path) -> None:
    p = _stoker("run", "--out", str(tmp_path / "r"), "--path", str(tmp_path / "missing"))
    assert p.returncode == 2 and "no such directory" in p.stderr and p.stderr.count("\n") == 1


@pytest.mark.parametrize(
    ("sinfo", "wanted", "want"),
    [
        ("(null)\n", 8, "declare no GPUs"),
        ("(null)\n(null)\n", 1, "declare no GPUs"),
        ("gpu:8\n", 8, None),
        ("gpu:h100:8(S:0-1)\n", 8, None),
        ("gpu:a100:4(S:0,1),gpu:v100:2\n(null)\n", 6, None),  # 4 + 2 on one node group
        ("gpu:a100:4(S:0,1)\ngpu:2\n", 8, "at most 4 GPUs each"),
        ("(null)\n", 0, None),  # no GPUs asked for: nothing to check
    ],
)
def test_gres_problem(sinfo: str, wanted: int, want: str | None) -> None:
    from launchers.slurm.gres import gres_problem

    got = gres_problem(sinfo, wanted, "gpu")
    assert (got is None) if want is None else (got is not None and want in got and "\n" not in got)


def test_submit_gpus_on_a_cluster_without_gres_is_one_line_before_sbatch(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sinfo").write_text("#!/bin/sh\necho '(null)'\n")
    (bin_dir / "sbatch").write_text(f"#!/bin/sh\ntouch {tmp_path}/sbatch-called\n")
    for tool in ("sinfo", "sbatch"):
        (bin_dir / tool).chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    p = _stoker(
        "submit", "--nodes", "2", "--gpus-per-node", "8", "--out", str(tmp_path / "r"), env=env, cwd=tmp_path
    )
    assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr
    assert "declare no GPUs" in p.stderr and "drop --gpus-per-node" in p.stderr
    assert not (tmp_path / "sbatch-called").exists()


def test_submit_renders_fail_unjudged_unless_allowed(tmp_path: Path) -> None:
    strict = _stoker("submit", "--nodes", "2", "--dry-run", "--out", str(tmp_path / "r"))
    loose = _stoker("submit", "--nodes", "2", "--dry-run", "--allow-unjudged", "--out", str(tmp_path / "r"))
    report = [ln for ln in strict.stdout.splitlines() if " launchers.cli report " in ln]
    assert len(report) == 1 and report[0].endswith(" --fail-unjudged")
    assert "--fail-unjudged" not in loose.stdout
