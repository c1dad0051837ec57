"""Tests at the level of the answer for code that decides and had none: the storage
confirmation follows the spec's storage threshold; the host-link copy finding is judged by the
slower direction; coverage does not count pair records as the inter-node sweep; a storage path
promising read and write with only a read record is not measured; `stoker check --drain` with a
hostlist is refused before any step runs. Records, specs and figures written by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from reports.shared.spec import parse_spec
from reports.shared.storage_rule import to_confirm
from reports.table.read import RecordSet
from tests.unit.recordgen import io, judge_records, net
from tests.unit.test_confirm import fio_rec


@pytest.mark.parametrize(("threshold", "again"), [(0.8, True), (0.7, False)])
def test_the_storage_confirmation_follows_the_specs_storage_threshold(threshold: float, again: bool) -> None:
    """7.6 GB/s against 10 advertised: under 80%, measured again; over 70%, not."""
    spec = parse_spec(
        {
            "name": "t",
            "storage": [{"path": "/scratch", "kind": "local", "write_GBps": 10}],
            "thresholds": {"storage": threshold},
        },
        "spec.yaml",
    )
    assert to_confirm(fio_rec(7.6), spec) is again


def test_the_host_link_finding_is_judged_by_the_slower_copy_direction() -> None:
    """Gen5 x16 (~63 GB/s): H2D 50 GB/s is fine, D2H 10 GB/s is not: the link is below spec."""
    from reports.judging.node.inventory import judge_inventory

    base = {"kind": "host", "host": "n1", "component": "host link", "device": "GPU0", "gen": 5, "width": 16}
    slow_back = judge_inventory([{**base, "h2d_pinned_GBps": 50.0, "d2h_pinned_GBps": 10.0}])
    (f,) = [f for f in slow_back if f.check == "host link copy"]
    assert f.status == "below_spec", f.message
    both_fast = judge_inventory([{**base, "h2d_pinned_GBps": 50.0, "d2h_pinned_GBps": 50.0}])
    (g,) = [f for f in both_fast if f.check == "host link copy"]
    assert g.status == "ok", g.message


def _line(j: object, start: str) -> dict[str, str]:
    (ln,) = [ln for ln in j.coverage["coverage"] if ln["what"].startswith(start)]  # type: ignore[attr-defined]
    return dict(ln)


def test_pair_records_across_nodes_do_not_measure_the_inter_node_promise() -> None:
    spec = parse_spec({"name": "t", "gpus_per_node": 1, "network": {"inter_node": {"GBps": 50}}}, "spec.yaml")
    pairs = [net("pair", "all_reduce", 2**k, 45.0, ("n1", "n2"), ranks=2) for k in range(20, 27)]
    j = judge_records(RecordSet(net=pairs), spec)
    assert _line(j, "inter-node network")["status"] == "unmeasured"
    assert j.verdict != "pass"
    sweep = [net("inter-node", "all_reduce", 2**k, 45.0, ("n1", "n2"), ranks=2) for k in range(20, 27)]
    assert _line(judge_records(RecordSet(net=sweep), spec), "inter-node network")["status"] == "measured"


def test_a_path_promising_read_and_write_with_only_a_read_record_is_not_measured() -> None:
    spec = parse_spec(
        {"name": "t", "storage": [{"path": "/data", "kind": "shared", "read_GBps": 4, "write_GBps": 2}]},
        "spec.yaml",
    )
    read = io("dataloader_read", "read", "/data", 4.0, scope="shared", per_host={"n1": 4.0}, runtime_s=10)
    j = judge_records(RecordSet(io=[read]), spec)
    line = _line(j, "shared storage /data")
    assert line["status"] == "unmeasured" and "write" in line["why"], line
    assert j.verdict == "incomplete"


def test_check_drain_with_a_hostlist_is_refused_before_any_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from launchers.cli import main
    from tests.harness.fake_scheduler import FakeScheduler

    fake = FakeScheduler(tmp_path, slurm={"gpu1": ("idle", "none")})
    monkeypatch.setenv("PATH", fake.env()["PATH"])
    out = tmp_path / "out"
    assert main(["check", "--checks", "inventory", "--drain", "--node", "gpu[1-4]", "--out", str(out)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "--node 'gpu[1-4]' is not one plain node name" in line
    assert fake.calls() == [] and not (out.exists() and any(out.iterdir()))  # no step wrote anything
