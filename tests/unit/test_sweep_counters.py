"""Counters read around a plain `stoker net` sweep: the readings of a node (sysfs trees
hand-written in the kernel's counter format, tests/data/inventory/sweep-counters-*.yaml) become
counter records without `soak_pass`; a (host, rail) finding names what rose on its NIC, and a
NIC whose error counters rose while its rail was not found slow is a finding of its own. The
node's inventory is the real-format fixture node (tests/data/inventory: `nvidia-smi topo -m`
bytes, sysfs): GPU j is nearest mlx5_j."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from netbench.inventory.counters import Snapshot, read_snapshot
from netbench.soak import counter_records, sweep_counters
from netbench.topology import Topology
from reports.judging.fleet.stability import stability
from reports.judging.network.nic_counters import sweep_counter_findings
from reports.judging.network.rail_nic import name_nics, rails_of_nic
from reports.shared.findings import Finding
from reports.shared.records import RecordWriter
from tests.unit.test_inventory import D, inventory_of


def _snapshot(tmp: Path, name: str) -> Snapshot:
    for rel, text in yaml.safe_load((D / name).read_text())["files"].items():
        (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp / rel).write_text(text)
    return read_snapshot(tmp, run=lambda _args: None)


@pytest.fixture
def readings(tmp_path: Path) -> tuple[Snapshot, Snapshot]:
    return (
        _snapshot(tmp_path / "before", "sweep-counters-before.yaml"),
        _snapshot(tmp_path / "after", "sweep-counters-after.yaml"),
    )


@pytest.fixture
def counters(readings: tuple[Snapshot, Snapshot]) -> list[dict[str, Any]]:
    before, after = readings
    return counter_records("r1", None, {"node7": before}, {"node7": after}, "2026-01-01T00:00:00Z")


@pytest.fixture
def inventory(tmp_path: Path) -> list[dict[str, Any]]:
    return inventory_of(tmp_path / "inv", {})


def slow(rail: int | None) -> Finding:
    return Finding(
        component="node", check="pair busbw", status="below_spec", measured=25.0, expected=50.0,
        unit="GB/s", hosts=("node7",), message="node7 is slow with every partner.",
        extra={} if rail is None else {"rail": rail},
    )  # fmt: skip


def test_sweep_counter_records_carry_no_soak_pass(counters: list[dict[str, Any]]) -> None:
    moved = {(c["device"], c["counter"]): (c["delta"], c["severity"]) for c in counters}
    # by hand from the two trees: mlx5_3 symbol 0->7, downed 0->1; mlx5_5 symbol 0->12; mlx5_1
    # xmit_wait +90000 (info); eno1 carrier 2->4; port_xmit_data is not a counter stoker reads
    assert moved == {
        ("mlx5_3:1", "symbol_error"): (7, "error"),
        ("mlx5_3:1", "link_downed"): (1, "error"),
        ("mlx5_5:1", "symbol_error"): (12, "error"),
        ("mlx5_1:1", "port_xmit_wait"): (90000, "info"),
        ("eno1", "carrier_changes"): (2, "error"),
    }
    assert all("soak_pass" not in c for c in counters)
    assert stability([], [], counters) == []  # a soak's judgement leaves them alone


def test_the_nic_of_a_fine_rail_that_counted_errors_is_its_own_finding(
    counters: list[dict[str, Any]], inventory: list[dict[str, Any]]
) -> None:
    assert rails_of_nic("node7", "mlx5_3:1", inventory) == (3,)
    assert rails_of_nic("node7", "eno1", inventory) == ()
    named = name_nics([slow(5)], inventory, counters)
    # rail 5 is named: its NIC's rise is in its message; rail 3 measured fine: its own finding;
    # eno1 is near no GPU (management), mlx5_1's xmit_wait is congestion: nothing
    assert named[0].extra["nic"][0]["counters"] == {"symbol_error": 12}
    assert "errors during the run: symbol_error +12" in named[0].message
    (f,) = sweep_counter_findings(named, inventory, counters)
    assert (f.component, f.status, f.hosts, f.extra["device"], f.extra["rail"]) == (
        "network port", "unstable", ("node7",), "mlx5_3:1", 3,
    )  # fmt: skip
    assert f.extra["counters"] == {"link_downed": 1.0, "symbol_error": 7.0} and f.measured == 8.0
    assert f.message.startswith(
        "node7 mlx5_3:1, the NIC of rail 3 (nearest GPU3): link_downed +1, symbol_error +7 during "
        "the sweep, while no slow pair named rail 3 of node7;"
    )
    # with no slow rail both NICs are findings; a node slow on every rail explains them all
    assert [f.extra["device"] for f in sweep_counter_findings([], inventory, counters)] == [
        "mlx5_3:1",
        "mlx5_5:1",
    ]
    assert sweep_counter_findings([slow(None)], inventory, counters) == []


def test_an_ib_port_the_inventory_does_not_place_is_named_without_a_rail(
    counters: list[dict[str, Any]],
) -> None:
    found = sweep_counter_findings([], [], counters)
    assert [(f.extra["device"], "rail" in f.extra) for f in found] == [
        ("mlx5_3:1", False),
        ("mlx5_5:1", False),
    ]
    assert "a port the inventory places near no GPU" in found[0].message


class _OneRank:
    rank = 0

    def gather(self, obj: Any) -> list[Any]:
        return [obj]


class _QuietWatchdog:
    """What measure_step asks of a watchdog. A real one sets this process's signal wakeup fd
    and a watcher thread for good: a later test that signals the pytest process would then
    end the whole run with the watchdog's exit 3."""

    where = ""

    def arm(self, what: str) -> None: ...

    def disarm(self) -> None: ...


def test_a_plain_sweep_reads_the_counters_before_and_after_it(
    tmp_path: Path, readings: tuple[Snapshot, Snapshot], capsys: Any
) -> None:
    writer = RecordWriter(tmp_path / "net.jsonl")
    # the run's parts sweep_counters uses: one rank, its watchdog, rank 0's writer
    r = SimpleNamespace(b=_OneRank(), wd=_QuietWatchdog(), writer=writer, run_id="r1", say=print)
    order: list[str] = []
    it: Iterator[Snapshot] = iter(readings)

    def read() -> Snapshot:
        order.append("read")
        return next(it)

    sweep_counters(r, Topology(hosts=("node7",)), lambda: order.append("sweep"), str(tmp_path), True, read)  # type: ignore[arg-type]
    writer.close()
    assert order == ["read", "sweep", "read"]
    lines = [yaml.safe_load(x) for x in (tmp_path / "counters.jsonl").read_text().splitlines()]
    assert len(lines) == 5 and all(x["host"] == "node7" and "soak_pass" not in x for x in lines)
    assert (
        "error counters that rose during the sweep: node7 eno1 carrier_changes +2" in capsys.readouterr().out
    )
