"""Which nodes a failed srun step lost (launchers/slurm/lost_step.py), read from the step's
output, and `stoker set-aside --phase --step-log`'s lines and exit. Expectations are worked out
by hand from the inputs.

The srun lines below are real bytes: srun 22.05.8 (Debian 12) on the two-node Slurm bed
(tests/harness/slurm.py), a step of `srun --nodes=2 --ntasks-per-node=2 --kill-on-bad-exit=1
--label` whose tasks on n2 were SIGKILLed (KILLED) or SIGSTOPped while n1's tasks exited 3
(HUNG); and a three-node step (`--no-kill`, SlurmdTimeout=10) whose node n2 died whole: its
slurmd, slurmstepd and tasks SIGKILLed (NODE_DOWN). The task lines (`0: stoker net: ...`) are hand-written in netbench's format."""

from __future__ import annotations

import argparse
import json
import subprocess
from pathlib import Path

import pytest

from launchers.commands.setaside_cmd import main
from launchers.slurm import lost_step as ls
from tests.conftest import REPO, STOKER

TIMEOUT = "stoker net: timeout: all_reduce 2M did not finish within 20 s (--timeout)"  # hand-written
KILLED = f"""3: up n2
2: up n2
2: stoker net: rank 2 of 4 on n2: sweeping world
srun: error: n2: tasks 2-3: Killed
srun: launch/slurm: _step_signal: Terminating StepId=1.0
0: slurmstepd-n1: error: *** STEP 1.0 ON n1 CANCELLED AT 2026-11-29T02:00:36 ***
1: {TIMEOUT}
srun: error: n1: tasks 0-1: Terminated
srun: Force Terminated StepId=1.0
"""
HUNG = f"""2: up n2
3: up n2
0: {TIMEOUT}
1: {TIMEOUT}
srun: error: n1: tasks 0-1: Exited with exit code 3
srun: launch/slurm: _step_signal: Terminating StepId=2.0
srun: error: n2: tasks 2-3: Terminated
srun: Force Terminated StepId=2.0
"""

NODE_DOWN = """0: up n1
1: up n1
5: up n3
2: up n2
4: up n3
3: up n2
srun: error: Node failure on n2
srun: error: Node failure on n2
"""


def test_task_lists_read_as_srun_writes_them() -> None:
    assert ls.task_ids("2") == {2}
    assert ls.task_ids("2-3") == {2, 3}
    assert ls.task_ids("0,2-4") == {0, 2, 3, 4}


def test_the_node_whose_tasks_were_killed_is_lost_with_its_own_last_error() -> None:
    (x,) = ls.lost(KILLED, ["n1", "n2"])
    # n2's own last stoker line (task 2's); n1's timeout (task 1) is not n2's
    assert x == ls.Lost(
        "n2", "2-3", "srun: error: n2: tasks 2-3: Killed", "stoker net: rank 2 of 4 on n2: sweeping world"
    )
    (aside,) = ls.set_aside("inter-node", [x])
    assert (aside.host, aside.stage, aside.phase) == ("n2", "phase", "inter-node")
    assert aside.reason == (
        "its tasks were killed from outside the job (srun: error: n2: tasks 2-3: Killed): the node went "
        "down, or its processes were killed; its last error: stoker net: rank 2 of 4 on n2: sweeping world"
    )


def test_a_hang_names_no_node() -> None:
    # n1 exited on its watchdog (it answers); n2 was Terminated by Slurm ending the step
    assert ls.lost(HUNG, ["n1", "n2"]) == []


def test_a_node_slurm_found_down_is_lost() -> None:
    (x,) = ls.lost(NODE_DOWN, ["n1", "n2", "n3"])
    assert x == ls.Lost("n2", "", "srun: error: Node failure on n2", "")
    assert ls.reason(x) == (
        "Slurm found the node down mid-step (srun: error: Node failure on n2); "
        "its tasks printed no error of their own"
    )


def test_a_killed_node_that_said_nothing_is_named_with_sruns_line() -> None:
    text = "srun: error: n3: task 4: Killed\n"
    (x,) = ls.lost(text, ["n1", "n3"])
    assert (x.node, x.tasks, x.error) == ("n3", "4", "")
    assert ls.reason(x).endswith("its tasks printed no error of their own")


def test_how_tasks_ended_decides() -> None:
    assert ls.node_lost("Killed")
    assert not ls.node_lost("Terminated")
    assert not ls.node_lost("Exited with exit code 3")
    assert not ls.node_lost("Segmentation fault (core dumped)")  # a crash, not a lost node


def test_only_the_steps_nodes_are_named() -> None:
    # a node not among those the step ran on (set aside before) is not named again
    assert ls.lost(KILLED, ["n1"]) == []


def args(out: Path, nodes: str, min_nodes: int) -> argparse.Namespace:
    return argparse.Namespace(
        out=out, nodes=nodes, min_nodes=min_nodes, phase="inter-node", step_log="phase-inter-node.log"
    )


def test_set_aside_writes_the_line_and_prints_the_nodes_left(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "phase-inter-node.log").write_text(KILLED)
    assert main(args(tmp_path, "n1,n2,n3", 2)) == 0
    assert capsys.readouterr().out == "n1,n3\n"
    (line,) = [json.loads(x) for x in (tmp_path / "setaside.jsonl").read_text().splitlines()]
    assert (line["host"], line["stage"], line["phase"]) == ("n2", "phase", "inter-node")
    assert "srun: error: n2: tasks 2-3: Killed" in line["reason"]


def test_fewer_than_min_nodes_left_is_exit_3(tmp_path: Path) -> None:
    (tmp_path / "phase-inter-node.log").write_text(KILLED)
    assert main(args(tmp_path, "n1,n2", 2)) == 3
    assert (tmp_path / "setaside.jsonl").is_file()


def test_no_loss_leaves_every_node_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "phase-inter-node.log").write_text(HUNG)
    assert main(args(tmp_path, "n1,n2", 2)) == 0
    assert capsys.readouterr().out == "n1,n2\n"
    assert (tmp_path / "setaside.jsonl").read_text() == ""


def set_aside_cli(out: Path, nodes: str, *more: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*STOKER, "set-aside", str(out), nodes, "--min-nodes", "1", *more],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )


def test_the_command_line(tmp_path: Path) -> None:
    (tmp_path / "phase-storage.log").write_text("srun: error: n2: task 1: Killed\n")
    step = ("--phase", "storage", "--step-log", "phase-storage.log")
    p = set_aside_cli(tmp_path, "n1,n2", *step)
    assert (p.returncode, p.stdout) == (0, "n1\n"), p.stderr
    assert "stoker: n2 set aside: its tasks were killed" in p.stderr
    bad = set_aside_cli(tmp_path, "n1,-x", *step)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1, bad.stderr
    no_phase = set_aside_cli(tmp_path, "n1,n2", *step[2:])
    assert no_phase.returncode == 2 and "--step-log needs --phase NAME" in no_phase.stderr, no_phase.stderr
