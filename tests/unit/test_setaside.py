"""The preflight's set-aside: each node's last line decides, DIR/setaside.jsonl records it,
the report turns each line into a failing finding of its node."""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import pytest

from launchers.commands.setaside_cmd import set_aside
from reports.shared import setaside as sa
from reports.shared.findings import Finding, verdict_of

# the last line of a node's failing `stoker check` (hand-written in its format)
CHECK_FAIL = "stoker check n3: FAIL after 12.1 s: gpu: 7 of 8 GPUs visible"


def write_logs(out: Path, logs: dict[str, str]) -> None:
    (out / "preflight").mkdir(parents=True)
    for node, text in logs.items():
        (out / "preflight" / f"{node}.log").write_text(text)


def test_each_node_is_judged_by_its_own_last_line() -> None:
    logs = {
        "n1": "stoker check n1: pass after 30.7 s\nstoker preflight: n1 passed\n",
        "n2": "stoker preflight: n1 passed\n",  # another node's pass line is not n2's
        "n3": f"{CHECK_FAIL}\nstoker preflight: n3 stoker check exit 1: {CHECK_FAIL}\n\n",
        "n4": "",
    }
    got = sa.decide(["n1", "n2", "n3", "n4", "n5"], logs)
    assert got == [
        sa.SetAside("n2", "stoker preflight: n1 passed"),
        sa.SetAside("n3", f"stoker preflight: n3 stoker check exit 1: {CHECK_FAIL}"),
        sa.SetAside("n4", sa.NO_ANSWER),
        sa.SetAside("n5", sa.NO_ANSWER),
    ]


def run_main(
    out: Path, nodes: str, min_nodes: int, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, str]:
    rc = set_aside(argparse.Namespace(out=out, nodes=nodes, min_nodes=min_nodes))
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def test_set_aside_writes_the_record_and_prints_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_logs(tmp_path, {"n1": "stoker preflight: n1 passed\n", "n3": f"{CHECK_FAIL}\n"})
    rc, out, err = run_main(tmp_path, "n1,n2,n3", 1, capsys)
    assert (rc, out) == (0, "n1\n")
    assert "n3 set aside: " + CHECK_FAIL in err
    lines = [json.loads(x) for x in (tmp_path / "setaside.jsonl").read_text().splitlines()]
    assert lines == [{"host": "n2", "reason": sa.NO_ANSWER}, {"host": "n3", "reason": CHECK_FAIL}]


def test_fewer_than_min_nodes_stops_naming_them(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_logs(tmp_path, {"n1": "stoker preflight: n1 passed\n"})
    rc, out, err = run_main(tmp_path, "n1,n2", 2, capsys)
    assert (rc, out) == (3, "")
    assert "1 of 2 nodes passed the preflight, fewer than --min-nodes 2; set aside: n2" in err


def test_record_to_finding_to_verdict_fail(tmp_path: Path) -> None:
    (tmp_path / "setaside.jsonl").write_text(
        '{"host":"n3","reason":"gpu: 7 of 8 GPUs visible"}\n'
        '{"host":"gpu[1-4]","reason":"a hostlist names many nodes"}\n'  # not one plain name: read_all names it
        '{"host":"n4"}\n'  # no reason: read_all names it
    )
    items = sa.read(tmp_path)
    assert items == [sa.SetAside("n3", "gpu: 7 of 8 GPUs visible")]
    found = sa.findings(items)
    assert [(f.component, f.check, f.status, f.hosts) for f in found] == [
        ("node", "preflight", "below_spec", ("n3",))
    ]
    assert "gpu: 7 of 8 GPUs visible" in found[0].message
    healthy = Finding(
        component="intra-node network",
        check="all_reduce",
        status="ok",
        measured=300.0,
        expected=300.0,
        unit="GB/s",
        hosts=("n1",),
        message="meets the spec",
    )
    assert verdict_of([healthy]) == "pass"
    # a node set aside fails the acceptance even with every other figure ok and a phase
    # (the inter-node one, on one node left) unmeasured: fail, not incomplete
    assert verdict_of([*found, healthy], ["inter-node not measured"]) == "fail"


def test_no_file_no_set_aside(tmp_path: Path) -> None:
    assert sa.read(tmp_path) == []


def test_the_report_reads_the_record_first_and_still_judges_the_rest(tmp_path: Path) -> None:
    from reports.pipeline import collect
    from tests.conftest import DATA

    d = tmp_path / "basic"
    shutil.copytree(DATA / "reports" / "basic", d)
    before = collect(d).verdict
    (d / "setaside.jsonl").write_text('{"host":"n9","reason":"storage path /scratch is not writable"}\n')
    after = collect(d).verdict
    assert after["verdict"] == "fail"
    first = after["findings"][0]
    assert (first["component"], first["check"], first["status"], first["hosts"]) == (
        "node",
        "preflight",
        "below_spec",
        ["n9"],
    )
    assert "storage path /scratch is not writable" in first["message"]
    assert after["findings"][1:] == before["findings"]  # the others judged as before


def test_a_path_the_node_cannot_write_sets_it_aside_before_any_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from launchers.commands import preflight

    (tmp_path / "file").write_text("x")
    bad = tmp_path / "file" / "scratch"  # under a regular file: no directory can be made there
    monkeypatch.setenv("SLURMD_NODENAME", "n7")
    assert preflight.writable(str(tmp_path / "ok")) == ""
    rc = preflight.main(argparse.Namespace(paths=[str(tmp_path / "ok"), str(bad)]))
    text = capsys.readouterr().out
    want = f"stoker preflight: n7 storage path {bad} is not writable: Not a directory"
    fp, last = text.splitlines()  # which stoker it runs, then the verdict: no check was run
    assert (rc, last) == (1, want) and fp.startswith("stoker fingerprint: ")
    assert sa.decide(["n7"], {"n7": text}) == [sa.SetAside("n7", want)]


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ('{"host":"n9","reason":"gpu: 7 of', "line 1 cannot be read"),  # cut short
        ('{"host":"n9","reason":null}', "no reason given"),
        ('{"host":"n[1-4]","reason":"x"}', "not one plain node name"),
        ('{"reason":"x"}', "is empty or not text"),
        ("[1, 2]", "not a JSON object"),
    ],
)
def test_a_damaged_set_aside_line_fails_closed_naming_the_line(tmp_path: Path, line: str, says: str) -> None:
    """A line the report cannot read may be the node left out of the whole acceptance: the
    verdict is incomplete (exit 3), never pass, and names the line."""
    from reports.pipeline import collect
    from reports.shared.findings import EXIT_CODES

    d = passing_run(tmp_path)
    assert collect(d, scope="node").verdict["verdict"] == "pass"
    (d / "setaside.jsonl").write_text(line + "\n")
    after = collect(d, scope="node").verdict
    assert after["verdict"] == "incomplete" and EXIT_CODES["incomplete"] == 3
    assert "setaside.jsonl line 1" in after["headline"] and says in after["headline"], after["headline"]


def test_every_set_aside_node_is_in_report_mds_first_lines(tmp_path: Path) -> None:
    from reports.pipeline import build
    from tests.conftest import DATA

    d = tmp_path / "basic"
    shutil.copytree(DATA / "reports" / "basic", d)
    (d / "setaside.jsonl").write_text(
        '{"host":"n9","reason":"storage path /scratch is not writable"}\n{"host":"n7","reason":"gpu: 7 of 8"}\n'
    )
    head = build(d).markdown.splitlines()[:6]
    assert any("Set aside" in ln and "n7, n9" in ln for ln in head), head


def passing_run(tmp: Path) -> Path:
    """A one-node run that passes at --scope node: a 2-rank gloo sweep at 0.9 GB/s against the
    spec's 1 GB/s at the 0.8 threshold, storage in the run's scratch dir (hand-written records)."""
    import json

    from reports.shared.records import write_all
    from tests.unit.recordgen import io, net
    from tests.unit.test_coverage import H100, SPEC

    d = tmp / "run"
    d.mkdir()
    write_all(
        d / "net.jsonl",
        [net("world", "all_reduce", 2**k, 0.9, ("n1",), ranks=2, backend="gloo") for k in range(20, 27)],
    )
    scratch = str(d / ".io-scratch-abcd")
    write_all(
        d / "io.jsonl",
        [io("checkpoint_write", "write", scratch, 1.0, scope="local", per_host={"n1": 1.0}, runtime_s=3)],
    )
    man = {"schema": 1, "kind": "manifest", "tool": "net", "run_id": "r1", "host": "n1", "hardware": H100}
    (d / "manifest.jsonl").write_text(json.dumps(man) + "\n")
    (d / "spec.yaml").write_text(SPEC)
    return d


def test_each_finding_says_where_the_nodes_preflight_output_is(tmp_path: Path) -> None:
    """n3's output is in the results dir (a shared one, or node 0's filled by the relay); n4's
    never reached it (a results dir per node): the report says which, in words and in extra."""
    items = [sa.SetAside("n3", "gpu: 7 of 8 GPUs visible"), sa.SetAside("n4", sa.NO_ANSWER)]
    write_logs(tmp_path, {"n3": "stoker preflight: n3 gpu: 7 of 8 GPUs visible\n"})
    (tmp_path / "preflight" / "n4.log").symlink_to(tmp_path / "preflight" / "n3.log")  # not its output
    here = sa.logs_in(tmp_path, items)
    assert here == {"n3"}
    found = sa.findings(items, here)
    assert found[0].message.endswith("run the acceptance again. Its preflight output: preflight/n3.log.")
    assert found[1].message.endswith(
        "run the acceptance again. Its preflight output did not reach this results dir: look for "
        "preflight/n4.log in that node's own results dir, or in the job's log."
    )
    assert [f.extra["preflight_log"] for f in found] == ["preflight/n3.log", None]
    # without `here` (a caller that does not look), the finding is as before: no location
    assert "preflight_log" not in sa.findings(items)[0].extra
