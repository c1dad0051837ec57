"""Which nodes a multi-node phase lost (launchers/local/lost_nodes.py) and the set-aside lines
that name them and the nodes that never started (reports/shared/setaside.py). Expectations are
worked out by hand from the inputs."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from launchers.commands.setaside_cmd import set_aside
from launchers.local import lost_nodes as ln
from reports.shared import setaside as sa
from reports.shared.findings import verdict_of

NODES = ["n0", "n1", "n2"]
# node 0's last error when a peer's processes were killed: hand-written in netbench's format
TIMEOUT = "stoker net: timeout: all_reduce 2M did not finish within 20 s (--timeout)"


def test_an_end_file_reads_back() -> None:
    assert ln.parse_end("3\n" + TIMEOUT + "\n") == ln.End(3, TIMEOUT)
    assert ln.parse_end("0\n\n") == ln.End(0, "")
    assert ln.parse_end("0") == ln.End(0, "")
    assert ln.parse_end("") is None  # cut short: not an end
    assert ln.parse_end(None) is None
    assert ln.parse_end("x\n") is None


def test_a_node_with_no_end_and_a_still_heartbeat_is_lost() -> None:
    ends = {"n0": ln.End(3, TIMEOUT), "n1": ln.End(3, ""), "n2": None}
    # n2 silent 31 s >= 30: lost
    assert ln.decide(NODES, ends, {"n0": 0, "n1": 1, "n2": 31}, 30) == ln.Decision(("n2",), ())
    # n2 silent 29 s < 30: waited for
    assert ln.decide(NODES, ends, {"n0": 0, "n1": 1, "n2": 29}, 30) == ln.Decision((), ("n2",))
    # past the limit, a node that beats but never ends is lost too
    assert ln.decide(NODES, ends, {"n2": 0}, 30, past_limit=True) == ln.Decision(("n2",), ())


def test_every_node_ended_none_lost() -> None:
    ends = {n: ln.End(0, "") for n in NODES}
    assert ln.decide(NODES, ends, {n: 100.0 for n in NODES}, 30) == ln.Decision((), ())


def test_the_reason_carries_the_first_error_in_rank_order() -> None:
    ends = {"n0": ln.End(0, ""), "n1": ln.End(1, "stoker net: Connection closed by peer"), "n2": None}
    assert ln.last_error(NODES, ends) == "stoker net: Connection closed by peer"
    assert (
        ln.reason("inter-node", 30, TIMEOUT, False)
        == (
            "stopped answering during phase inter-node: no end of the phase and no heartbeat from its "
            f"launcher for 30 s (the node, or every stoker process on it, died); the nodes that went on said: {TIMEOUT}"[
                :300
            ]
        )
    )


def args(out: Path, min_nodes: int) -> argparse.Namespace:
    return argparse.Namespace(
        out=out,
        nodes="n0,n1,n2",
        min_nodes=min_nodes,
        phase="pairs",
        phase_index=4,
        stale=0.0,
        wait_limit=5.0,
    )


def test_main_sets_the_lost_node_aside_and_prints_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / ".stoker-end-4-n0").write_text(f"3\n{TIMEOUT}\n")
    (tmp_path / ".stoker-end-4-n1").write_text("3\n\n")
    (tmp_path / ".stoker-end-3-n2").write_text("0\n\n")  # an earlier phase's end is not this one's
    assert ln.main(args(tmp_path, 2)) == 0
    assert capsys.readouterr().out == "n0,n1\n"
    (line,) = [json.loads(x) for x in (tmp_path / "setaside.jsonl").read_text().splitlines()]
    assert (line["host"], line["stage"], line["phase"]) == ("n2", "phase", "pairs")
    assert TIMEOUT in line["reason"]
    # fewer than --min-nodes left: exit 3, the line still written
    assert ln.main(args(tmp_path, 3)) == 3
    assert (
        "2 of 3 nodes are left after phase pairs, fewer than --min-nodes 3; set aside: n2"
        in capsys.readouterr().err
    )


def test_the_stages_read_back_and_each_is_a_failing_finding(tmp_path: Path) -> None:
    lines = [
        sa.SetAside("n1", "gpu: 7 of 8 GPUs visible"),
        *sa.never_started([sa.never_started_name(2)], 60),
        sa.SetAside("n3", "stopped answering", "phase", "inter-node"),
    ]
    (tmp_path / sa.SETASIDE_FILE).write_text("".join(sa.line(s) for s in lines))
    raw = [json.loads(x) for x in (tmp_path / sa.SETASIDE_FILE).read_text().splitlines()]
    assert raw == [
        {"host": "n1", "reason": "gpu: 7 of 8 GPUs visible"},  # a preflight's line: the two keys
        {
            "host": "node-rank-2",
            "reason": "never started: it did not reach the start barrier within 60 s",
            "stage": "start",
        },
        {"host": "n3", "reason": "stopped answering", "stage": "phase", "phase": "inter-node"},
    ]
    assert sa.read(tmp_path) == lines
    found = sa.findings(lines)
    assert [(f.check, f.hosts, f.status) for f in found] == [
        ("preflight", ("n1",), "below_spec"),
        ("start", ("node-rank-2",), "below_spec"),
        ("node-lost", ("n3",), "below_spec"),
    ]
    assert found[2].message.startswith("n3 stopped answering during phase inter-node and was left out")
    assert verdict_of(found) == "fail"


def test_a_stage_line_that_cannot_be_read_is_named(tmp_path: Path) -> None:
    (tmp_path / sa.SETASIDE_FILE).write_text(
        '{"host":"n1","reason":"x","stage":"later"}\n{"host":"n2","reason":"x","stage":"phase"}\n'
    )
    got, bad = sa.read_all(tmp_path)
    assert got == []
    assert "line 1 cannot be read (stage 'later' is not one of start, preflight, phase)" in bad[0]
    assert "line 2 cannot be read (stage phase names no phase)" in bad[1]


def test_set_aside_names_the_nodes_that_never_started_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "preflight").mkdir()
    for n in ("n0", "n1"):
        (tmp_path / "preflight" / f"{n}.log").write_text(f"{sa.passed_line(n)}\n")
    ns = argparse.Namespace(
        out=tmp_path, nodes="n0,n1", min_nodes=2, never_started="node-rank-2", start_limit=60
    )
    assert set_aside(ns) == 0
    assert capsys.readouterr().out == "n0,n1\n"
    assert sa.read(tmp_path) == [
        sa.SetAside("node-rank-2", "never started: it did not reach the start barrier within 60 s", "start")
    ]
    ns.min_nodes = 3
    assert set_aside(ns) == 3
    assert "2 of 3 nodes passed the preflight, fewer than --min-nodes 3" in capsys.readouterr().err


def test_report_md_names_each_stage_on_its_own_line() -> None:
    found = sa.findings(
        [
            sa.SetAside("n3", "stopped answering", "phase", "inter-node"),
            sa.SetAside("n1", "gpu: 7 of 8 GPUs visible"),
            sa.SetAside("node-rank-4", "never started: x", "start"),
        ]
    )
    assert sa.headlines(found) == [
        "Never started, left out of the whole acceptance: node-rank-4.",
        "Set aside by the preflight, left out of the whole acceptance: n1.",
        "Lost mid-phase, left out of the phases after it: n3 (phase inter-node).",
    ]
