"""The rendered acceptance script, compared line by line with golden files."""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from launchers.profiles import get_profile
from launchers.slurm.sbatch import SbatchConfig, job_time, plan_of, render
from reports.shared.errors import UsageError
from tests.conftest import DATA

GOLDEN = DATA / "launchers"
CASES = {
    # 2 CPU-only nodes, gloo, quick: what the real-Slurm test submits
    "two-node-quick-gloo": SbatchConfig(
        nodes=2,
        ranks_per_node=2,
        gpus_per_node=0,
        profile=get_profile("quick"),
        out="/shared/results",
        backend="gloo",
    ),
    # 4 GPU nodes on a partition, with a spec and a workload and given storage paths
    "four-node-standard-gpu": SbatchConfig(
        nodes=4,
        ranks_per_node=8,
        gpus_per_node=8,
        profile=get_profile("standard"),
        out="/lustre/acceptance run",
        partition="h100",
        spec="/etc/stoker/spec.yaml",
        workload="/etc/stoker/llama.yaml",
        local_path="/scratch",
        shared_path="/lustre/io",
    ),
    # one node: no inter-node or pair phases
    "one-node-full-mpi": SbatchConfig(
        nodes=1,
        ranks_per_node=8,
        gpus_per_node=8,
        profile=get_profile("full"),
        out="/r",
        backend="mpi",
        time="4:00:00",
    ),
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
    # quick, 2 nodes: (120 + 120) preflight + (120 + 120) inventory + (200 + 120) compute
    # + 3 net phases x (180 + 120) + (180 + 120) io + 120 report + 300 margin = 2420 s
    assert job_time(plan_of(CASES["two-node-quick-gloo"])) == "0:40:20"
    # full, 1 node of 8 GPUs: (120 + 120) + (120 + 120) + (1980 + 120) + 1 x (1800 + 120) + (1800 + 120)
    # + 300 + 300 = 7020 s (one node is below the two the profiles are sized for: their limits as they are)
    assert (
        job_time(
            plan_of(
                SbatchConfig(
                    nodes=1, ranks_per_node=8, gpus_per_node=8, profile=get_profile("full"), out="/r"
                )
            )
        )
        == "1:57:00"
    )


def test_compute_budget_sets_the_phase_and_its_limit() -> None:
    cfg = CASES["two-node-quick-gloo"]
    short = replace(cfg, profile=replace(cfg.profile, compute_budget_s=2.0))
    (line,) = [x for x in render(short).splitlines() if x.startswith("until phase compute ")]
    # 2 s of sweep + 1 + 180 s of start-up room, + the job's 120 s grace; the default is 200 + 120
    assert (
        line.startswith("until phase compute 303 ") and " compute --profile quick --budget 2 --out " in line
    )
    assert job_time(plan_of(short)) == "0:40:03"  # 2420 - 320 + 303 = 2403 s


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


FAKE_SRUN = """#!/bin/sh
# srun OPTIONS... PROGRAM ARGS...: runs the program once, here
while [ $# -gt 0 ]; do case "$1" in -*) shift ;; *) break ;; esac; done
exec "$@"
"""
FAKE_SCONTROL = """#!/bin/sh
case "$*" in *hostnames*) echo n1 ;; *) echo "NodeName=n1 NodeAddr=127.0.0.1 State=IDLE" ;; esac
"""
# a stoker whose phases end as the test says: net/io exit with $NET_RC/$IO_RC (net prints a
# reason first), report with $REPORT_RC after noting its arguments
FAKE_STOKER = """#!/bin/sh
case "$1" in
  net) echo "stoker: the srun step environment does not say how many ranks there are" >&2; exit "${NET_RC:-0}" ;;
  io) exit "${IO_RC:-0}" ;;
  inventory) exit 0 ;;
  compute) exit 0 ;;
  preflight) exit 0 ;;
  set-aside) [ -n "${SETASIDE_RC:-}" ] && { echo "stoker: n2 set aside: bad" >&2; exit "$SETASIDE_RC"; }
    echo n1,n2; exit 0 ;;  # every node passed its preflight
  fingerprint) echo "n1 0123456789abcdef /venv/bin/python"; echo "n2 0123456789abcdef /venv/bin/python"; exit 0 ;;  # the fake srun runs once for both nodes
  report) shift; echo "$*" > "$ARGS_FILE"; exit "${REPORT_RC:-0}" ;;
  phase-record) shift; exec "$STOKER_PY" -m launchers.commands.phase_record_cmd "$@" ;;  # the real line writer
esac
exit 99
"""


def run_rendered(
    cfg: SbatchConfig, bin_dir: Path, tmp_path: Path, timeout: float = 60, **env: str
) -> subprocess.CompletedProcess[str]:
    """The job script rendered from `cfg`, run by bash on node n1 of job 7 with the fake
    commands of `bin_dir` first on PATH and `env` besides."""
    script = tmp_path / "job.sbatch"
    script.write_text(render(cfg), encoding="utf-8")
    base = {"PATH": f"{bin_dir}:/usr/bin:/bin", "SLURM_JOB_ID": "7", "SLURM_JOB_NODELIST": "n1"}
    run_env = {**base, "STOKER_PY": sys.executable, **env}
    return subprocess.run(["bash", str(script)], env=run_env, capture_output=True, text=True, timeout=timeout)


def fake_bin(tmp_path: Path, srun: str = FAKE_SRUN, stoker: str = FAKE_STOKER) -> Path:
    """TMP/bin with the fake srun, scontrol and stoker, for PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("srun", srun), ("scontrol", FAKE_SCONTROL), ("stoker", stoker)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    return bin_dir


@pytest.mark.parametrize(
    ("net_rc", "report_rc", "job_rc"),
    [
        (0, 0, 0),  # pass (or unjudged with --allow-unjudged)
        (0, 1, 1),  # fail, or unjudged without --allow-unjudged: the report exits 1
        (0, 3, 3),  # the report found a phase that wrote no records
        (2, 3, 3),  # network phases died: incomplete
        (2, 1, 1),  # a fail outranks the abort
        (2, 0, 3),  # a report that passes over an aborted phase still does not pass
        (0, 70, 70),  # a report that crashed with no aborted phase fails the job
    ],
)
def test_the_jobs_exit_is_the_verdicts(net_rc: int, report_rc: int, job_rc: int, tmp_path: Path) -> None:
    bin_dir = fake_bin(tmp_path)
    out = tmp_path / "out"
    cfg = SbatchConfig(
        nodes=2,
        ranks_per_node=2,
        gpus_per_node=0,
        profile=get_profile("quick"),
        out=str(out),
        backend="gloo",
        local_path=str(tmp_path / "local"),
        stoker=("stoker",),
    )
    p = run_rendered(
        cfg,
        bin_dir,
        tmp_path,
        NET_RC=str(net_rc),
        REPORT_RC=str(report_rc),
        ARGS_FILE=str(tmp_path / "report-args"),
    )
    assert p.returncode == job_rc, p.stdout + p.stderr
    assert (tmp_path / "report-args").read_text().split() == [str(out), "--fail-unjudged"]
    phases = [line for line in (out / "phases.jsonl").read_text().splitlines()]
    assert len(phases) == 6 and phases[0].startswith('{"phase":"inventory","rc":0,"elapsed_s":')
    assert phases[1].startswith('{"phase":"compute","rc":0,')
    # byte for byte the line the job wrote with printf before reports/shared/phases.py wrote it
    assert re.fullmatch(
        rf'\{{"phase":"intra-node","rc":{net_rc},"elapsed_s":\d+,"log":"phase-intra-node.log"\}}', phases[2]
    )
    # the phase's own words are kept for the report's first line
    assert (
        out / "phase-intra-node.log"
    ).read_text() == "stoker: the srun step environment does not say how many ranks there are\n"


def test_groups_search_replaces_pairs_above_64_nodes() -> None:
    def last(nodes: int) -> tuple[str, tuple[str, ...]]:
        cfg = SbatchConfig(
            nodes=nodes, ranks_per_node=8, gpus_per_node=8, profile=get_profile("standard"), out="/r"
        )
        last = plan_of(cfg).net[-1]
        return last.name, last.scopes

    assert last(64) == ("pairs", ("pairs",))
    assert last(65) == ("groups", ("groups",))
    assert "--scopes groups" in render(
        SbatchConfig(nodes=128, ranks_per_node=8, gpus_per_node=8, profile=get_profile("standard"), out="/r")
    )


def test_launcher_scripts_switch_to_groups_at_the_same_node_count() -> None:
    from launchers.local.argv import argv_parser, program
    from launchers.profiles import GROUPS_ABOVE_NODES

    # the scripts take their phase list from launchers/plan.py (`launchers.local.argv phases`)
    for script in ("torchrun.sh", "mpirun.sh"):
        text = (Path(__file__).resolve().parents[2] / "launchers" / script).read_text()
        assert 'tokens PAIRS --nnodes "$NNODES" phases' in text, script
    for nodes, last in ((GROUPS_ABOVE_NODES, "pairs"), (GROUPS_ABOVE_NODES + 1, "groups")):
        assert program(argv_parser().parse_args(["--nnodes", str(nodes), "phases"]), Path.cwd())[-2:] == [
            last,
            last,
        ]


@pytest.mark.parametrize(("setaside_rc", "job_rc", "soak_s"), [(3, 3, None), (2, 2, None), (3, 3, 600)])
def test_too_few_nodes_after_the_preflight_stop_the_job(
    setaside_rc: int, job_rc: int, soak_s: int | None, tmp_path: Path
) -> None:
    """`stoker set-aside` below --min-nodes (3) or given bad names (2): nothing runs after it,
    a burn-in's soak (`--soak`) neither."""
    bin_dir = fake_bin(tmp_path)
    out = tmp_path / "out"
    cfg = SbatchConfig(
        nodes=2,
        ranks_per_node=2,
        gpus_per_node=0,
        profile=get_profile("quick"),
        out=str(out),
        local_path=str(tmp_path / "local"),
        stoker=("stoker",),
        soak_s=soak_s,
    )
    script = tmp_path / "job.sbatch"
    script.write_text(render(cfg), encoding="utf-8")
    assert ("\nuntil phase soak " in script.read_text()) == bool(soak_s)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "SLURM_JOB_ID": "7", "SLURM_JOB_NODELIST": "n1"}
    p = subprocess.run(
        ["bash", str(script)],
        env={**env, "SETASIDE_RC": str(setaside_rc)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == job_rc, p.stdout + p.stderr
    assert "stoker: n2 set aside: bad" in p.stderr and "stops after the preflight" in p.stderr
    assert not (out / "phases.jsonl").exists() and not (out / "phase-soak.log").exists()


def test_min_nodes_is_between_one_and_the_nodes() -> None:
    base = CASES["two-node-quick-gloo"]
    assert "--min-nodes 2)" in render(base)  # the default on 2 nodes
    assert "--min-nodes 1)" in render(replace(base, min_nodes=1))
    with pytest.raises(UsageError, match="--min-nodes 3: give 1 to --nodes"):
        render(replace(base, min_nodes=3))


@pytest.mark.parametrize("name", sorted(CASES))
def test_no_step_binds_a_rank_to_one_gpu(name: str) -> None:
    # a per-task GPU binding (--gpu-bind=single:1, --gpus-per-task) hides the other ranks'
    # GPUs from each task and breaks CUDA IPC / P2P between them: every rank sees the node's
    # GPUs and netbench takes the one of its local rank (pick_device)
    text = render(CASES[name])
    assert "--gpu-bind" not in text and "--gpus-per-task" not in text
    sweeps = [x for x in text.splitlines() if " stoker net " in x]
    assert sweeps and all(("--cpu-bind=cores" in x) == bool(CASES[name].gpus_per_node) for x in sweeps)


def test_every_rank_sees_the_node_and_takes_its_local_rank() -> None:
    from netbench.backends import pick_device

    assert [pick_device(r, 8) for r in range(8)] == list(range(8))


def test_the_network_phases_get_the_reports_spec() -> None:
    text = render(CASES["four-node-standard-gpu"])
    sweeps = [x for x in text.splitlines() if " stoker net " in x]
    (report,) = [x for x in text.splitlines() if " stoker report " in x]
    assert len(sweeps) == 3 and " --spec /etc/stoker/spec.yaml " in report
    assert all(" --spec /etc/stoker/spec.yaml --out " in x for x in sweeps)
    assert "--spec" not in render(CASES["two-node-quick-gloo"])  # no spec: none handed on


def test_every_phase_that_judges_or_confirms_gets_the_spec() -> None:
    """A figure under the spec is measured again before it fails: the preflight, every
    network phase, the storage phase and the report are all handed --spec. A soak's network
    phase is judged pass by pass against its own median, as `stoker soak`'s: no --spec there."""
    for cfg in (CASES["four-node-standard-gpu"], replace(CASES["four-node-standard-gpu"], soak_s=600)):
        lines = render(cfg).splitlines()
        for sub in ("preflight", "net", "io", "report"):
            runs = [x for x in lines if f" stoker {sub} " in x]
            if cfg.soak_s and sub == "net":
                assert len(runs) == 1 and " --soak 600" in runs[0] and "--spec" not in runs[0]
                continue
            assert runs and all(" --spec /etc/stoker/spec.yaml " in x for x in runs), (sub, cfg.soak_s)


def test_a_spec_path_with_a_line_break_is_refused() -> None:
    with pytest.raises(UsageError, match="line break"):
        render(replace(CASES["four-node-standard-gpu"], spec="/etc/spec.yaml\nrm -rf /"))
