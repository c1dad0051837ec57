"""The rendered acceptance script, compared line by line with golden files."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from launchers.profiles import get_profile
from launchers.sbatch import SbatchConfig, job_time, render
from tests.conftest import DATA

GOLDEN = DATA / "launchers"
CASES = {
    # 2 CPU-only nodes, gloo, quick: what the real-Slurm test submits
    "two-node-quick-gloo": SbatchConfig(
        nodes=2, ranks_per_node=2, gpus_per_node=0, profile=get_profile("quick"),
        out="/shared/results", backend="gloo"),
    # 4 GPU nodes on a partition, with a spec and a workload and given storage paths
    "four-node-standard-gpu": SbatchConfig(
        nodes=4, ranks_per_node=8, gpus_per_node=8, profile=get_profile("standard"),
        out="/lustre/acceptance run", partition="h100", spec="/etc/stoker/spec.yaml",
        workload="/etc/stoker/llama.yaml", local_path="/scratch", shared_path="/lustre/io"),
    # one node: no inter-node or pair phases
    "one-node-full-mpi": SbatchConfig(
        nodes=1, ranks_per_node=8, gpus_per_node=8, profile=get_profile("full"), out="/r", backend="mpi",
        time="4:00:00"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_render_matches_golden(name: str) -> None:
    got = render(CASES[name]).splitlines()
    want = (GOLDEN / f"{name}.sbatch").read_text(encoding="utf-8").splitlines()
    for n, (g, w) in enumerate(zip(got, want), 1):
        assert g == w, f"line {n} differs"
    assert len(got) == len(want)


def test_no_placeholder_left() -> None:
    for cfg in CASES.values():
        assert "{{" not in render(cfg)


def test_job_time_adds_up_phase_limits() -> None:
    # quick, 2 nodes: 3 net phases x (180 + 120) + (180 + 120) io + 120 report + 300 margin = 1620 s
    assert job_time(CASES["two-node-quick-gloo"]) == "0:27:00"
    # full, 1 node: 1 x (1800 + 120) + (1800 + 120) + 300 + 300 = 4440 s
    assert job_time(SbatchConfig(nodes=1, ranks_per_node=2, gpus_per_node=0, profile=get_profile("full"), out="/r")) == "1:14:00"


def test_given_time_and_quoted_out() -> None:
    text = render(CASES["four-node-standard-gpu"])
    assert "OUT='/lustre/acceptance run'\n" in text
    assert "#SBATCH --partition=h100\n" in text
    assert render(CASES["one-node-full-mpi"]).count("#SBATCH --time=4:00:00\n") == 1


def write_goldens(directory: Path = GOLDEN) -> None:
    """Regenerate the golden files after an intended change (then read the diff)."""
    for name, cfg in CASES.items():
        (directory / f"{name}.sbatch").write_text(render(cfg), encoding="utf-8")


@pytest.mark.parametrize("name", sorted(CASES))
def test_rendered_script_is_valid_bash(name: str, tmp_path: Path) -> None:
    script = tmp_path / "job.sbatch"
    script.write_text(render(CASES[name]), encoding="utf-8")
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True).returncode == 0
