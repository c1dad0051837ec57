"""`stoker soak` planning (pure parts): durations, the plateau sizes, the phases' argv."""

from __future__ import annotations

import pytest

from launchers.cli import main
from launchers.commands import soak_cmd as sc
from launchers.options import parse_duration
from launchers.profiles import PROFILES, plateau
from reports.shared.errors import UsageError


@pytest.mark.parametrize(
    "text, seconds", [("90", 90), ("90s", 90), ("3m", 180), ("4h", 14400), ("1.5d", 129600)]
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "0", "-3m", "4 hours", "3x"])
def test_bad_durations_say_what_to_give(text: str) -> None:
    with pytest.raises(UsageError, match="90s, 30m, 4h"):
        parse_duration(text)


def test_bad_duration_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["soak", "--duration", "soon"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--duration 'soon'" in err
    assert main(["run", "--soak", "0"]) == 2 and "--soak '0'" in capsys.readouterr().err
    assert main(["submit", "--nodes", "2", "--soak", "3m", "--platform", "k8s", "--dry-run"]) == 2
    assert "--soak runs on --platform slurm" in capsys.readouterr().err


def test_plateau_is_the_top_size_and_a_quarter() -> None:
    p = plateau(PROFILES["standard"])
    assert (int(p.min_bytes), int(p.max_bytes)) == (256 << 20, 1 << 30)
    assert p.ops == PROFILES["standard"].ops


def test_net_phase_is_stoker_net_with_the_soak_options() -> None:
    ph = sc.net_phase(
        PROFILES["quick"], "/r", 2, "gloo", sc.Chunk(first=6, passes=5, seconds=300.4), ("stoker",)
    )
    argv = list(ph.argv)
    assert argv[:2] == ["stoker", "net"]
    assert argv[argv.index("--soak") + 1] == "300" and argv[argv.index("--soak-first") + 1] == "6"
    assert argv[argv.index("--soak-passes") + 1] == "5"
    assert argv[argv.index("--min-bytes") + 1] == str(1 << 20) and argv[argv.index("--max-bytes") + 1] == str(
        4 << 20
    )
    assert ph.limit_s == 300 + PROFILES["quick"].net_timeout_s + sc.GRACE_S


def test_io_phase_writes_checkpoints_only() -> None:
    argv = list(sc.io_phase(PROFILES["quick"], "/r", "/scratch", 0, ("stoker",)).argv)
    assert argv[argv.index("--workloads") + 1] == "checkpoint" and "--path" in argv


def test_slurm_soak_is_one_phase_of_every_scope() -> None:
    from launchers.slurm.sbatch import SbatchConfig, job_time, plan_of, render

    cfg = SbatchConfig(
        nodes=4, ranks_per_node=2, gpus_per_node=0, profile=PROFILES["quick"], out="/r", soak_s=180
    )
    script = render(cfg)
    lines = [ln.removesuffix("; do :; done") for ln in script.splitlines() if ln.startswith("until phase ")]
    assert [ln.split()[2] for ln in lines] == ["inventory", "compute", "soak", "storage"]
    soak = lines[2].split()
    assert soak[soak.index("--scopes") + 1] == "intra-node,world,inter-node,pairs"
    assert soak[soak.index("--soak") + 1] == "180" and soak[soak.index("--min-bytes") + 1] == str(1 << 20)
    plain = job_time(
        plan_of(SbatchConfig(nodes=4, ranks_per_node=2, gpus_per_node=0, profile=PROFILES["quick"], out="/r"))
    )
    assert job_time(plan_of(cfg)) != plain
