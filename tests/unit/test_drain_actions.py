"""`stoker drain DIR` and the scheduler calls at the argv level, against the fake sinfo,
scontrol and kubectl of tests/harness/fake_scheduler.py (each call logged as it was made)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from launchers.actions import action_io
from launchers.cli import main
from tests.harness.fake_scheduler import FakeScheduler

SINFO = ["sinfo", "-h", "-N", "-n"]


def gpu_finding(host: str, **over: Any) -> dict[str, Any]:
    return {
        "component": "gpu",
        "check": "gpu errors",
        "status": "below_spec",
        "measured": 1,
        "expected": 0,
        "unit": "rows",
        "hosts": [host],
        "message": f"{host} GPU3 has 1 pending row remap",
        "device": "GPU3",
        **over,
    }


def write_verdict(d: Path, findings: list[Any], **top: Any) -> Path:
    """A verdict as `stoker report` leaves it: judged from DIR's records (host.jsonl naming the
    findings' hosts: stoker's own inventory), its inputs' digests in it, the outputs ledger
    vouching for it."""
    from reports.pipeline import input_digests
    from reports.shared.safe_write import write_outputs

    hosts = sorted({h for f in findings for h in f.get("hosts", [])})
    (d / "host.jsonl").write_text("".join(json.dumps({"kind": "host", "host": h}) + "\n" for h in hosts))
    verdict = {
        "verdict": "fail",
        "findings": findings,
        "measured_hosts": hosts,
        "imported_hosts": [],
        "inputs": input_digests(d, []),
        **top,
    }
    write_outputs(d, {"verdict.json": json.dumps(verdict)})
    return d


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeScheduler:
    f = FakeScheduler(
        tmp_path,
        slurm={
            "n1": ("idle", "none"),
            "n2": ("idle", "none"),
            "n3": ("drained*", "bad DIMM, ticket 42"),
            "n4": ("down*", "Not responding"),
        },
        sinfo_lines={"n9": ["n9|idle|none", "n10|drained|bad DIMM"]},
    )
    monkeypatch.setenv("PATH", f.env()["PATH"])
    return f


def test_drain_drains_one_plain_short_name_with_a_report_reason(fake: FakeScheduler, tmp_path: Path) -> None:
    write_verdict(tmp_path, [gpu_finding("n1.cluster.example.org")])
    assert main(["drain", str(tmp_path)]) == 0
    reason = "Reason=stoker: [report] gpu errors GPU3 below_spec (1 < 0 rows)"
    assert fake.calls() == [
        [*SINFO, "n1", "-o", "%N|%T|%E"],  # the short name, never the FQDN
        ["scontrol", "update", "NodeName=n1", "State=DRAIN", reason.replace(" (1 < 0 rows)", "")],
    ]
    assert fake.node("n1")[0] == "drained"


@pytest.mark.parametrize(
    "host",
    [
        *("gpu[001-512]", "n1,n2", "n1 n2", "n1\nn2", "ALL", "unknown", "localhost", "-n1", "10.0.0.1"),
        *("ALL.cluster", "localhost.localdomain", "1.2.3.4x"),  # what scontrol would get
    ],
)
def test_drain_never_acts_on_a_name_that_is_not_one_plain_node(
    fake: FakeScheduler, tmp_path: Path, host: str, capsys: pytest.CaptureFixture[str]
) -> None:
    write_verdict(tmp_path, [gpu_finding(host)])
    assert main(["drain", str(tmp_path)]) == 0
    assert fake.calls() == []  # not even sinfo
    line, *rest = capsys.readouterr().out.splitlines()  # one line, the name quoted on it
    assert rest in ([], [f"stoker drain: {tmp_path / 'verdict.json'} names no node to drain; nothing to do"])
    assert line.startswith("stoker drain: ") and ascii(host) in line
    assert line.endswith(("not drained", "left as it is"))


def test_drain_acts_only_when_sinfo_answers_for_that_one_node(
    fake: FakeScheduler, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_verdict(tmp_path, [gpu_finding("n9"), gpu_finding("n7")])
    assert main(["drain", str(tmp_path)]) == action_io.ACTION_FAILED
    assert [c[0] for c in fake.calls()] == ["sinfo", "sinfo"]  # no scontrol
    err = capsys.readouterr().err
    assert "sinfo answered for n10, n9, not for n9 alone" in err and "sinfo knows no node n7" in err


def test_drain_keeps_admin_states_and_reasons(
    fake: FakeScheduler, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_verdict(tmp_path, [gpu_finding("n3"), gpu_finding("n4")])
    assert main(["drain", str(tmp_path)]) == 0
    assert [c[0] for c in fake.calls()] == ["sinfo", "sinfo"]
    assert fake.node("n3") == ("drained*", "bad DIMM, ticket 42")
    assert fake.node("n4") == ("down*", "Not responding")
    out = capsys.readouterr().out
    assert "n3 already drained by someone else (bad DIMM, ticket 42); left as it is" in out
    assert "n4 is down* (Not responding): not stoker's to change" in out


def test_one_node_run_shared_storage_and_scope_findings_drain_nothing(
    fake: FakeScheduler, tmp_path: Path
) -> None:
    findings = [
        {**gpu_finding("n1"), "component": "shared storage", "check": "checkpoint_write write bandwidth"},
        {**gpu_finding("n1"), "component": "intra-node network", "check": "all_reduce busbw plateau"},
        {**gpu_finding("n1"), "component": "node", "check": "baseline: w on /mnt", "figure": "node-storage"},
    ]
    write_verdict(tmp_path, findings)
    assert main(["drain", str(tmp_path)]) == 0
    assert fake.calls() == []


def test_an_imported_host_is_not_drained(fake: FakeScheduler, tmp_path: Path) -> None:
    write_verdict(tmp_path, [gpu_finding("n1"), gpu_finding("n2")], imported_hosts=["N1.cluster"])
    assert main(["drain", str(tmp_path)]) == 0
    assert [c[4] for c in fake.calls() if c[0] == "sinfo"] == ["n2"]  # n1 came only from the import


def test_dry_run_runs_no_scheduler_command_and_prints_the_argv(
    fake: FakeScheduler, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_verdict(tmp_path, [gpu_finding("n1")])
    assert main(["drain", str(tmp_path), "--dry-run"]) == 0
    assert fake.calls() == []
    assert capsys.readouterr().out.splitlines() == [
        "would run: sinfo -h -N -n n1 -o '%N|%T|%E'",
        "would run, if sinfo answers for n1 alone and it is idle, mixed or allocated: scontrol update "
        "NodeName=n1 State=DRAIN 'Reason=stoker: [report] gpu errors GPU3 below_spec'",
    ]


def test_a_failed_scontrol_is_named_and_exits_non_zero(
    fake: FakeScheduler, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # sinfo knows n5, scontrol does not (a hand-made disagreement): the drain fails
    st = fake.state()
    st["sinfo_lines"]["n5"] = ["n5|idle|none"]
    fake.save(st)
    write_verdict(tmp_path, [gpu_finding("n5")])
    assert main(["drain", str(tmp_path)]) == action_io.ACTION_FAILED
    out, err = capsys.readouterr()
    assert "stoker drain: running: scontrol update NodeName=n5 State=DRAIN" in out
    assert err.startswith("stoker drain: `scontrol update NodeName=n5 State=DRAIN") and "exited 1" in err
    assert "stoker check" not in out + err


BAD_SHAPES = [
    "[]",
    '{"findings": {}}',
    '{"findings": [1]}',
    '{"findings": [{"component": "gpu", "status": "below_spec", "hosts": "n1"}]}',
    '{"findings": [{"component": "gpu", "status": "below_spec", "hosts": [1]}]}',
    '{"findings": [{"component": "gpu", "status": 1, "hosts": ["n1"]}]}',
    '{"findings": [{"component": "disk", "status": "below_spec", "hosts": ["n1"]}]}',
    '{"findings": [{"component": "gpu", "status": "below_spec", "hosts": ["n1"], "check": ["x"]}]}',
    '{"findings": [{"component": "gpu", "status": "below_spec", "hosts": ["n1"], "measured": "fast"}]}',
    '{"findings": [{"component": "gpu", "status": "below_spec", "hosts": ["n1"], "expected": true}]}',
    '{"imported": "fio.json", "findings": []}',
    '{"findings": [{"component": "gpu", "status": "below_spec", "hosts": ["\\udc80"]}]}',  # lone surrogate
    '{"findings": [',
]


@pytest.mark.parametrize("text", BAD_SHAPES)
def test_a_bad_verdict_is_one_line_exit_2_and_nothing_acted_on(
    fake: FakeScheduler, tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # a good finding first: it must not be drained before the bad one is seen
    good = json.dumps(gpu_finding("n1"))
    body = (
        text.replace('"findings": [', '"findings": [' + good + ", ", 1) if '"findings": [' in text else text
    )
    from reports.shared.safe_write import write_outputs

    write_outputs(tmp_path, {"verdict.json": body})  # stoker's bytes as far as the ledger says
    assert main(["drain", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("stoker drain: "), err
    assert fake.calls() == []


@pytest.mark.parametrize("kind", ["fifo", "devzero", "dir"])
def test_verdict_that_is_no_regular_file_is_refused_at_once(
    fake: FakeScheduler, tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    v = tmp_path / "verdict.json"
    if kind == "fifo":
        os.mkfifo(v)
    elif kind == "devzero":
        v.symlink_to("/dev/zero")
    else:
        v.mkdir()
    t = time.monotonic()
    assert main(["drain", str(tmp_path)]) == 2
    assert time.monotonic() - t < 5
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert fake.calls() == []


def test_a_hung_sinfo_is_stopped_at_the_time_left(fake: FakeScheduler, tmp_path: Path) -> None:
    st = fake.state()
    st["hang"] = ["sinfo"]
    fake.save(st)
    actor = action_io.Actor("stoker check", dry_run=False, deadline=time.monotonic() + 2.0)
    t = time.monotonic()
    action_io.slurm(actor, "n1", [("io", "x")], frozenset())
    assert time.monotonic() - t < 5 and actor.failed
    pid = int((tmp_path / "sinfo.pid").read_text())
    assert not Path(f"/proc/{pid}").exists() or "\nState:\tZ" in Path(f"/proc/{pid}/status").read_text()
    assert fake.node("n1") == ("idle", "none")


def test_a_report_baseline_regression_of_a_local_disk_drains_and_of_shared_storage_never(
    fake: FakeScheduler, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`stoker baseline`, `stoker report --baseline`, `stoker drain` end to end: n1's local
    /nvme and n2's share of /lustre each fell from 3.0 to 1.0 GB/s (synthetic records)."""
    from reports.shared.records import IO_FILE, write_all
    from tests.unit.recordgen import io

    def results(name: str, bw: float) -> Path:
        d = tmp_path / name
        d.mkdir()
        write_all(
            d / IO_FILE,
            [
                io("checkpoint_write", "write", "/nvme", bw, scope="local", per_host={"n1": bw}),
                io("checkpoint_write", "write", "/lustre", bw, scope="shared", per_host={"n2": bw}),
            ],
        )
        return d

    base = tmp_path / "b.yaml"
    assert main(["baseline", str(results("acc", 3.0)), "--out", str(base)]) == 0
    later = results("later", 1.0)
    assert main(["report", str(later), "--baseline", str(base)]) == 1
    capsys.readouterr()
    assert main(["drain", str(later)]) == 0
    sinfo, drain = fake.calls()  # n1 alone: n2's finding never reaches the scheduler
    assert sinfo == [*SINFO, "n1", "-o", "%N|%T|%E"]
    assert drain[:4] == ["scontrol", "update", "NodeName=n1", "State=DRAIN"]
    assert drain[4].startswith("Reason=stoker: [report] baseline: checkpoint_write write on /nvme")
    out = capsys.readouterr().out
    assert "/lustre is shared storage, not this node's own disk: not drained" in out


# -- act only on what stoker measured and wrote ------------------------------


def test_a_hand_written_verdict_is_refused_and_nothing_runs(
    fake: FakeScheduler, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A dir holding only a verdict.json nobody's stoker wrote, naming a login node."""
    (tmp_path / "verdict.json").write_text(json.dumps({"verdict": "pass", "findings": [gpu_finding("n1")]}))
    assert main(["drain", str(tmp_path)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "was not written by stoker" in line and fake.calls() == []


def test_a_finding_appended_to_stokers_verdict_is_refused(
    fake: FakeScheduler, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_verdict(tmp_path, [gpu_finding("n1")])
    doc = json.loads((tmp_path / "verdict.json").read_text())
    doc["findings"].append(gpu_finding("n2"))
    (tmp_path / "verdict.json").write_text(json.dumps(doc))
    assert main(["drain", str(tmp_path)]) == 2
    assert "was not written by stoker (or was changed since)" in capsys.readouterr().err
    assert fake.calls() == []


@pytest.mark.parametrize("change", ["edited", "removed", "added"])
def test_records_changed_since_the_verdict_refuse_the_drain(
    fake: FakeScheduler, tmp_path: Path, change: str, capsys: pytest.CaptureFixture[str]
) -> None:
    write_verdict(tmp_path, [gpu_finding("n1")])
    if change == "edited":
        (tmp_path / "host.jsonl").write_text(json.dumps({"kind": "host", "host": "n2"}) + "\n")
    elif change == "removed":
        (tmp_path / "host.jsonl").unlink()
    else:
        (tmp_path / "net.jsonl").write_text("{}\n")
    assert main(["drain", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert {"edited": "host.jsonl changed", "removed": "host.jsonl, which", "added": "net.jsonl was added"}[
        change
    ] in err
    assert fake.calls() == []


def test_a_verdict_without_its_inputs_is_refused(fake: FakeScheduler, tmp_path: Path) -> None:
    """A verdict of an older stoker, or one written through the ledger by hand: no inputs."""
    from reports.shared.safe_write import write_outputs

    write_outputs(
        tmp_path, {"verdict.json": json.dumps({"verdict": "fail", "findings": [gpu_finding("n1")]})}
    )
    assert main(["drain", str(tmp_path)]) == 2
    assert fake.calls() == []


def test_a_host_in_none_of_stokers_records_is_not_drained(
    fake: FakeScheduler, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_verdict(tmp_path, [gpu_finding("n1"), gpu_finding("n2")], measured_hosts=["N2.cluster"])
    assert main(["drain", str(tmp_path)]) == 0
    assert [c[4] for c in fake.calls() if c[0] == "sinfo"] == ["n2"]
    assert "'n1' is in none of stoker's own records in DIR: not drained" in capsys.readouterr().out


@pytest.mark.parametrize("verdict", ["pass", "unjudged", "incomplete"])
def test_a_verdict_that_is_not_fail_drains_nothing(fake: FakeScheduler, tmp_path: Path, verdict: str) -> None:
    write_verdict(tmp_path, [gpu_finding("n1")], verdict=verdict)
    assert main(["drain", str(tmp_path)]) == 0
    assert fake.calls() == []


def test_hosts_of_stoker_import_are_imported_and_never_drained(
    fake: FakeScheduler, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`stoker import` output judged by `stoker report`: verdict.json names the import and its
    hosts, and drain acts on none of them, whatever the finding."""
    from reports.pipeline import host_origins
    from reports.table.read import RecordSet

    manifest = {"kind": "manifest", "source": "n1.log", "host": "n1", "hosts": ["n1"]}
    rs = RecordSet(manifests=[manifest], host=[{"host": "n1"}, {"host": "n2"}])

    class NoImports:
        sources: list[str] = []
        manifests: list[Any] = []
        io: list[Any] = []
        net: list[Any] = []

    measured, imported, sources = host_origins(rs, NoImports())
    assert (measured, imported, sources) == (["n2"], ["n1"], ["n1.log"])
    write_verdict(tmp_path, [gpu_finding("n1")], measured_hosts=measured, imported_hosts=imported)
    assert main(["drain", str(tmp_path)]) == 0
    assert fake.calls() == []
    assert "comes from an imported file" in capsys.readouterr().out


def test_stoker_import_output_names_its_import_and_hosts_in_verdict_json(
    fake: FakeScheduler, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`stoker import LOG --out DIR`, `stoker report DIR`: verdict.json says which file was
    imported and which hosts it named, and lists no host as measured by stoker."""
    from tests.conftest import DATA

    d = tmp_path / "imp"
    log = DATA / "nccl_tests" / "v2.13_mpirun_all_reduce.log"
    assert main(["import", str(log), "--out", str(d)]) == 0
    main(["report", str(d)])
    v = json.loads((d / "verdict.json").read_text())
    assert v["imported"] == [log.name]
    assert v["imported_hosts"] and v["measured_hosts"] == []
    capsys.readouterr()
    assert main(["drain", str(d)]) == 0
    assert fake.calls() == []


def test_the_report_phase_line_recorded_after_the_verdict_does_not_block_the_drain(
    fake: FakeScheduler, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`stoker run` / `soak` / the acceptance job append the report's own phase line after the
    report wrote verdict.json: the drain still acts; another phase line appended refuses it."""
    phases = tmp_path / "phases.jsonl"
    phases.write_text(json.dumps({"phase": "intra-node", "rc": 0, "elapsed_s": 3}) + "\n")
    write_verdict(tmp_path, [gpu_finding("n1")])
    with phases.open("a") as fh:
        fh.write(json.dumps({"phase": "report", "rc": 1, "elapsed_s": 2}) + "\n")
    assert main(["drain", str(tmp_path)]) == 0
    assert [c[0] for c in fake.calls()] == ["sinfo", "scontrol"]
    with phases.open("a") as fh:
        fh.write(json.dumps({"phase": "storage", "rc": 0, "elapsed_s": 2}) + "\n")
    assert main(["drain", str(tmp_path)]) == 2
    assert "phases.jsonl changed since it was judged" in capsys.readouterr().err
