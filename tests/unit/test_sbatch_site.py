"""What a site adds to the acceptance job: its account, QOS and reservation as #SBATCH lines,
and a container image the steps run in (pyxis/enroot); goldens compared line by line."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from launchers.profiles import get_profile
from launchers.slurm.sbatch import SbatchConfig, render
from reports.shared.errors import UsageError
from tests.conftest import DATA

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = DATA / "launchers"
CASES = {
    # 2 GPU nodes charged to an account, under a QOS, inside a reservation
    "two-node-account-qos-reservation": SbatchConfig(
        nodes=2,
        ranks_per_node=8,
        gpus_per_node=8,
        profile=get_profile("quick"),
        out="/shared/acc",
        partition="h100",
        account="ml-infra",
        qos="high",
        reservation="acceptance_2026.11",
    ),
    # the steps in a container image (pyxis/enroot): the results dir and every storage path mounted
    "two-node-pyxis-image": SbatchConfig(
        nodes=2,
        ranks_per_node=8,
        gpus_per_node=8,
        profile=get_profile("quick"),
        out="/lustre/acc",
        spec="/lustre/acc/spec.yaml",
        local_path="/scratch",
        shared_path="/data",
        more_shared=("/lustre/datasets",),
        image="nvcr.io#acme/stoker:1",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_render_matches_golden(name: str) -> None:
    got = render(CASES[name]).splitlines()
    want = (GOLDEN / f"{name}.sbatch").read_text(encoding="utf-8").splitlines()
    for n, (g, w) in enumerate(zip(got, want), 1):
        assert g == w, f"line {n} differs"
    assert len(got) == len(want)


def write_goldens(directory: Path = GOLDEN) -> None:
    """Regenerate this file's golden files after an intended change (then read the diff)."""
    for name, cfg in CASES.items():
        (directory / f"{name}.sbatch").write_text(render(cfg), encoding="utf-8")


def test_account_qos_reservation_are_sbatch_lines_only_when_given() -> None:
    text = render(CASES["two-node-account-qos-reservation"])
    opts = [x for x in text.splitlines() if x.startswith("#SBATCH ")]
    assert opts[6:9] == [
        "#SBATCH --account=ml-infra",
        "#SBATCH --qos=high",
        "#SBATCH --reservation=acceptance_2026.11",
    ]
    bare = render(
        replace(CASES["two-node-account-qos-reservation"], account=None, qos=None, reservation=None)
    )
    assert not any(o in bare for o in ("--account", "--qos", "--reservation"))


@pytest.mark.parametrize("field", ["account", "qos", "reservation"])
@pytest.mark.parametrize("value", ["ml infra", "a,b", "x\n#SBATCH --uid=0", "", "a'b"])
def test_a_value_that_is_not_one_name_is_refused(field: str, value: str) -> None:
    with pytest.raises(UsageError, match=f"--{field} .*: not one Slurm name"):
        render(replace(CASES["two-node-account-qos-reservation"], **{field: value}))


def submit(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "launchers.cli", "submit", *args],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_submit_passes_them_through(tmp_path: Path) -> None:
    p = submit(
        tmp_path, "--dry-run", "--nodes", "2", "--account", "ml", "--qos", "low", "--reservation", "r1"
    )
    assert p.returncode == 0, p.stderr
    assert "#SBATCH --account=ml\n#SBATCH --qos=low\n#SBATCH --reservation=r1\n" in p.stdout


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--account", "ml infra"], "--account 'ml infra': not one Slurm name"),
        (["--qos", "a;b"], "--qos 'a;b': not one Slurm name"),
        (["--reservation", ""], "--reservation '': not one Slurm name"),
        (
            ["--platform", "k8s", "--image", "reg/stoker:1", "--qos", "high"],
            "--qos applies to --platform slurm",
        ),
    ],
)
def test_bad_input_is_one_line_exit_2(tmp_path: Path, args: list[str], needle: str) -> None:
    p = submit(tmp_path, "--dry-run", "--nodes", "2", *args)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and needle in p.stderr, p.stderr


def test_with_an_image_every_stoker_step_runs_in_it() -> None:
    text = render(CASES["two-node-pyxis-image"])
    assert "\nIMAGE='nvcr.io#acme/stoker:1'\n" in text
    assert (
        '\nMOUNTS="$OUT:$OUT,$LOCAL_IO:$LOCAL_IO,$SHARED_IO:$SHARED_IO",/lustre/datasets:/lustre/datasets\n'
        in text
    )
    pyxis = '"--container-image=$IMAGE" "--container-mounts=$MOUNTS"'
    lines = text.splitlines()
    stoker = [x for x in lines if "srun " in x and " stoker " in x]
    # preflight, set-aside, fingerprint, phase-record, 6 phases, the report: each in the image
    assert len(stoker) == 12 and all(pyxis in x for x in stoker), [x for x in stoker if pyxis not in x]
    # the mounts' sources are made on every node before the first step that mounts them
    first = next(n for n, x in enumerate(lines) if pyxis in x)
    assert lines[first - 1].endswith('mkdir -p "$LOCAL_IO" "$SHARED_IO" /lustre/datasets || true')
    # what the batch script ran on its own node is a one-task step there
    assert (
        'timeout --kill-after=30 120 srun --nodes=1 --ntasks-per-node=1 --ntasks=1 --kill-on-bad-exit=1 "--nodelist=$FIRST" '
        in text
    )
    # steps that run no stoker stay on the node
    assert all(pyxis not in x for x in lines if " test -s " in x or " rmdir " in x)


def test_without_an_image_nothing_runs_in_a_container() -> None:
    text = render(replace(CASES["two-node-pyxis-image"], image=None))
    assert "--container" not in text and "IMAGE=" not in text and "MOUNTS=" not in text


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        (
            {"image": "reg/stoker:1 --container-mounts=/:/"},
            "--image 'reg/stoker:1 --container-mounts=/:/': not one image",
        ),
        ({"image": "reg/stoker:1\n#SBATCH --uid=0"}, "not one image reference"),
        (
            {"more_shared": ("/lustre/a,b",)},
            "a storage path '/lustre/a,b': a path mounted into --image cannot hold a comma",
        ),
        ({"local_path": "/scratch:/etc"}, "--local-path '/scratch:/etc': a path mounted"),
        ({"out": "/lustre/my acc"}, "--out '/lustre/my acc': a path mounted"),
    ],
)
def test_bad_image_or_mount_is_refused(change: dict[str, object], needle: str) -> None:
    with pytest.raises(UsageError) as e:
        render(replace(CASES["two-node-pyxis-image"], **change))  # type: ignore[arg-type]
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_submit_with_an_image_runs_the_images_stoker(tmp_path: Path) -> None:
    p = submit(
        tmp_path, "--dry-run", "--nodes", "2", "--gpus-per-node", "8", "--image", "reg.example/stoker:1"
    )
    assert p.returncode == 0, p.stderr
    assert "\nIMAGE=reg.example/stoker:1\n" in p.stdout and sys.executable not in p.stdout
    assert '"--container-mounts=$MOUNTS" --label stoker net ' in p.stdout


def test_the_four_node_image_example_renders_one_sbatch(tmp_path: Path) -> None:
    # `stoker submit --nodes 4 --gpus-per-node 8 --image IMG --dry-run`: a script for 4 nodes of
    # 8 GPUs, each rank in the image (pyxis), one task per GPU, printed and not submitted
    p = submit(
        tmp_path, "--nodes", "4", "--gpus-per-node", "8", "--image", "reg.example/stoker:1", "--dry-run"
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("#!/bin/bash") and "#SBATCH --nodes=4" in p.stdout
    assert "\nIMAGE=reg.example/stoker:1\n" in p.stdout and "--container-image" in p.stdout
    assert "single:1" not in p.stdout
    assert not list(tmp_path.iterdir())  # a dry run writes nothing


def test_submit_refuses_a_bare_framework_image(tmp_path: Path) -> None:
    p = submit(tmp_path, "--dry-run", "--nodes", "2", "--image", "nvcr.io/nvidia/pytorch:24.12-py3")
    assert (
        p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "bare framework image" in p.stderr
    )


@pytest.mark.parametrize("name", sorted(CASES))
def test_rendered_script_is_valid_bash(name: str, tmp_path: Path) -> None:
    script = tmp_path / "job.sbatch"
    script.write_text(render(CASES[name]), encoding="utf-8")
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True).returncode == 0


LOGGING_SRUN = """#!/bin/sh
# srun OPTIONS... PROGRAM ARGS...: notes its options, then runs the program once, here
printf '%s\\n' "$*" >> "$SRUN_LOG"
while [ $# -gt 0 ]; do case "$1" in -*) shift ;; *) break ;; esac; done
exec "$@"
"""


def test_the_job_hands_every_stoker_step_the_image_and_mounts(tmp_path: Path) -> None:
    from tests.unit.test_sbatch import FAKE_SCONTROL, FAKE_STOKER

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("srun", LOGGING_SRUN), ("scontrol", FAKE_SCONTROL), ("stoker", FAKE_STOKER)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    out, local = tmp_path / "out", tmp_path / "local"
    cfg = replace(
        CASES["two-node-pyxis-image"],
        gpus_per_node=0,
        ranks_per_node=2,
        backend="gloo",
        out=str(out),
        spec=None,
        local_path=str(local),
        shared_path=None,
        more_shared=(),
    )
    script = tmp_path / "job.sbatch"
    script.write_text(render(cfg), encoding="utf-8")
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "SLURM_JOB_ID": "7",
        "SLURM_JOB_NODELIST": "n1",
        "ARGS_FILE": str(tmp_path / "report-args"),
        "STOKER_PY": sys.executable,
        "SRUN_LOG": str(tmp_path / "srun.log"),
    }
    p = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    calls = (tmp_path / "srun.log").read_text().splitlines()
    pyxis = f"--container-image=nvcr.io#acme/stoker:1 --container-mounts={out}:{out},{local}:{local} "
    in_image = [c for c in calls if " stoker " in c]
    # preflight, set-aside, fingerprint, 6 phases and a phase-record after each, the report
    assert len(in_image) == 16 and all(pyxis in c for c in in_image), calls
    assert all("--container" not in c for c in calls if " stoker " not in c)
    assert (out / "phases.jsonl").read_text().count('"rc":0') == 6
