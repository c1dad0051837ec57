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
from launchers.sbatch import SbatchConfig, render
from reports.errors import UsageError
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
