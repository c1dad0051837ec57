"""Counters between soak passes: parsers on fixtures in the sysfs and nvidia-smi formats
(tests/data/soak/, headers say where the formats come from), deltas, and the counter records."""

from __future__ import annotations

from pathlib import Path

import yaml

from netbench.inventory import counters as c
from netbench.soak import counter_records

D = Path(__file__).resolve().parents[1] / "data" / "soak"


def _tree(tmp: Path, name: str) -> Path:
    for rel, text in yaml.safe_load((D / name).read_text())["files"].items():
        p = tmp / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return tmp


def _no_tools(_args: object) -> None:
    return None


def test_sysfs_counters_are_read_per_port_and_interface(tmp_path: Path) -> None:
    snap = c.read_snapshot(_tree(tmp_path, "ib-counters-before.yaml"), run=_no_tools)
    assert snap["mlx5_0:1"]["port_xmit_wait"] == 118324
    assert snap["mlx5_0:1"]["symbol_error"] == 0
    assert "port_xmit_data" not in snap["mlx5_0:1"]  # traffic, not health
    assert snap["mlx5_1:1"] == {"symbol_error": 3}  # 'N/A' is left out, never a zero
    assert snap["eth0"] == {"carrier_changes": 2, "rx_errors": 0, "tx_dropped": 0, "rx_dropped": 17}
    assert "lo" not in snap


def test_deltas_name_what_moved(tmp_path: Path) -> None:
    before = c.read_snapshot(_tree(tmp_path / "a", "ib-counters-before.yaml"), run=_no_tools)
    after = c.read_snapshot(_tree(tmp_path / "b", "ib-counters-after.yaml"), run=_no_tools)
    got = {(d.device, d.counter): (d.delta, d.severity) for d in c.deltas(before, after)}
    assert got == {
        ("mlx5_0:1", "symbol_error"): (412, "error"),
        ("mlx5_0:1", "link_downed"): (1, "error"),
        ("mlx5_0:1", "port_xmit_wait"): (220000 - 118324, "info"),
        ("eth0", "carrier_changes"): (2, "error"),
    }


def test_a_counter_that_went_down_was_reset() -> None:
    got = c.deltas({"eth0": {"rx_errors": 50}}, {"eth0": {"rx_errors": 3}})
    assert [(d.counter, d.delta) for d in got] == [("rx_errors", 3)]


def test_gpu_query_and_gauges() -> None:
    snap = c.parse_gpu_counters((D / "gpu-counters.csv").read_text())
    assert snap["gpu0"] == {
        "temperature_C": 34,
        "power_W": 71.28,
        "throttle_hw": 0.0,
        "ecc_corrected": 0,
        "ecc_uncorrected": 0,
    }
    assert snap["gpu1"]["throttle_hw"] == 1.0  # 0x40: HW thermal slowdown
    assert "ecc_uncorrected" not in snap["gpu2"]  # [N/A]
    moved = {(d.device, d.counter): d.delta for d in c.deltas({"gpu1": {"ecc_uncorrected": 0}}, snap)}
    assert moved[("gpu1", "ecc_uncorrected")] == 1
    assert moved[("gpu1", "throttle_hw")] == 1.0 and ("gpu0", "throttle_hw") not in moved


def test_new_xid_lines_count() -> None:
    log = (Path(__file__).resolve().parents[1] / "data" / "inventory" / "healthy-dmesg.txt").read_text()
    before = c.xid_counts(log)
    after = c.xid_counts(
        log + "[ 9000.1] NVRM: Xid (PCI:0000:5d:00): 79, pid=1, GPU has fallen off the bus.\n"
    )
    moved = c.deltas(before, after)
    assert {(d.counter, d.delta) for d in moved} == {("xid", 1), ("xid_hardware", 1)}


def test_counter_records_carry_pass_host_and_kind() -> None:
    recs = counter_records(
        "r1", 7, {"n1": {"eth0": {"carrier_changes": 2}}}, {"n1": {"eth0": {"carrier_changes": 4}}}, "T"
    )
    assert recs == [
        {
            "kind": "counter",
            "schema": 1,
            "run_id": "r1",
            "ts": "T",
            "soak_pass": 7,
            "host": "n1",
            "device": "eth0",
            "counter": "carrier_changes",
            "value": 4,
            "delta": 2,
            "severity": "error",
        }
    ]
