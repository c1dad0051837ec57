"""reports/shared/phases.py: the one phase list and the one writer and reader of DIR/phases.jsonl,
used by every launcher (stoker run, the sbatch job, torchrun.sh, mpirun.sh) and the report."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from launchers.cli import build_parser
from launchers.local.phases import PhaseResult, record_phase
from launchers.plan import net_phases as acceptance_net_phases
from launchers.profiles import GROUPS_ABOVE_NODES, get_profile
from launchers.slurm.sbatch import SbatchConfig, render
from reports.pipeline import missing_phases
from reports.shared import phases
from tests.conftest import REPO


def test_line_is_the_compact_json_the_sbatch_job_always_wrote() -> None:
    # the bytes of the job's old printf '{"phase":"%s","rc":%d,"elapsed_s":%d,"log":"phase-%s.log"}'
    assert phases.line("pairs", 124, 31, log="phase-pairs.log") == (
        '{"phase":"pairs","rc":124,"elapsed_s":31,"log":"phase-pairs.log"}\n'
    )
    # stoker run: tenths of a second, and the last line of output of a phase that failed
    assert phases.line("storage", 2, 1.5, error="fio: no such file") == (
        '{"phase":"storage","rc":2,"elapsed_s":1.5,"error":"fio: no such file"}\n'
    )
    assert phases.line("report", 0, 0.4) == '{"phase":"report","rc":0,"elapsed_s":0.4}\n'


def test_read_returns_what_every_writer_appended(tmp_path: Path) -> None:
    record_phase(tmp_path, PhaseResult(name="inventory", rc=0, elapsed_s=0.26, last_line="ignored when ok"))
    subprocess.run(
        [
            sys.executable,
            "-m",
            "launchers.commands.phase_record_cmd",
            str(tmp_path),
            "intra-node",
            "3",
            "12",
            "--log",
            "phase-x.log",
        ],
        check=True,
    )
    (tmp_path / phases.PHASES_FILE).open("a").write("not json\n")
    assert phases.read(tmp_path) == [
        {"phase": "inventory", "rc": 0, "elapsed_s": 0.3},
        {"phase": "intra-node", "rc": 3, "elapsed_s": 12, "log": "phase-x.log"},
    ]
    assert phases.read(tmp_path / "none") == []


def test_recorder_cannot_write_is_one_line_exit_2(tmp_path: Path) -> None:
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "launchers.cli",
            "phase-record",
            str(tmp_path / "no-dir"),
            "storage",
            "0",
            "1",
        ],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "cannot record phase storage" in p.stderr


def test_phase_record_is_left_out_of_stoker_help() -> None:
    assert "phase-record" not in build_parser().format_help()


@pytest.mark.parametrize("nodes", [1, 2, GROUPS_ABOVE_NODES, GROUPS_ABOVE_NODES + 1])
def test_job_phases_are_what_the_sbatch_job_runs(nodes: int) -> None:
    cfg = SbatchConfig(nodes=nodes, ranks_per_node=2, gpus_per_node=0, profile=get_profile("quick"), out="/r")
    ran = re.findall(r"^until (?:phase|across) (\S+) ", render(cfg), flags=re.M)
    assert [*ran, "report"] == phases.job_phases(nodes, GROUPS_ABOVE_NODES)
    assert acceptance_net_phases(nodes) == [(k.name, k.scopes) for k in phases.net_phases(nodes, 64)]


def test_every_phase_a_launcher_names_is_in_the_list() -> None:
    named = set()
    for script in ("torchrun.sh", "mpirun.sh"):
        text = (REPO / "launchers" / script).read_text()
        named |= set(re.findall(r"^\s*(?:phase|world) ([a-z-]+) ", text, flags=re.M))
        assert "printf" not in text
    run_cmd = (REPO / "launchers" / "commands" / "run_cmd.py").read_text()
    named |= set(re.findall(r'Phase\(\s*name="([a-z-]+)"', run_cmd))
    assert named == {"inventory", "compute", "storage", "network", "report"} and named <= set(phases.PHASES)
    for path in (REPO / "launchers").rglob("*"):
        if path.suffix in (".sh", ".sbatch"):
            assert '/phases.jsonl"' not in path.read_text(), path  # only reports/shared/phases.py writes it


def test_a_clean_phase_without_its_records_is_missing(tmp_path: Path) -> None:
    ran = [
        {"phase": name, "rc": 0, "elapsed_s": 1}
        for name in ("inventory", "intra-node", "inter-node", "groups", "storage", "report")
    ]
    assert missing_phases(tmp_path, ran, {"intra-node", "world"}, 0) == [
        "phase groups ended cleanly but wrote no network records",
        "phase storage ended cleanly but wrote no storage records",
    ]
    # an inventory that found nothing says so itself; the report measures nothing
    assert phases.missing_records("inventory", set(), 0) is None
    assert phases.missing_records("pairs", {"pair"}, 0) is None
    assert phases.missing_records("someone-elses-phase", set(), 0) is None
    assert json.loads(phases.line("x", 0, 1)) == {"phase": "x", "rc": 0, "elapsed_s": 1}
