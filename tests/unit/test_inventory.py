"""Node inventory: the parsers on outputs in the real formats, the reader on a fixture /sys, and
the judgement on a healthy 8-GPU / 8-NIC node and on one fault at a time (tests/data/inventory;
each file's '# ' header says where its format comes from and is stripped before use)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from netbench.inventory import parse
from netbench.inventory.hardware import ToolOutput
from netbench.inventory.read import read_inventory
from reports.judging.node.inventory import judge_inventory

D = Path(__file__).resolve().parents[1] / "data" / "inventory"
DEGRADED = yaml.safe_load((D / "degraded.yaml").read_text())
OUTPUTS = {  # the command each fixture output (hand-written in the real format: tests/data/SOURCES.md) answers (first distinguishing argument)
    "--query-gpu=" + ",".join(parse.GPU_QUERY): "healthy-query-gpu.csv",
    "--query-remapped-rows=" + ",".join(parse.REMAP_QUERY): "healthy-remapped-rows.csv",
    "--query-gpu=" + ",".join(parse.FABRIC_QUERY): "healthy-fabric.csv",
    "topo": "healthy-topo-m.txt",
    "nvlink": "healthy-nvlink-s.txt",
    "dmesg": "healthy-dmesg.txt",
}


def recorded(name: str) -> str:
    """A fixture output without its '# ' header lines (no nvidia-smi output line starts so)."""
    lines = (D / name).read_text().split("\n")
    while lines and lines[0].startswith("# "):
        lines.pop(0)
    return "\n".join(lines)


def rdma_ready_proc(tmp_path: Path) -> Path:
    """This machine's /proc facts under tmp_path, with an unlimited locked-memory limit: a
    fixture /sys with RDMA ports would otherwise have this machine's limit judged too."""
    proc = tmp_path / "proc"
    (proc / "self").mkdir(parents=True)
    (proc / "sys" / "kernel").mkdir(parents=True)
    for name in ("cpuinfo", "meminfo", "sys/kernel/osrelease"):
        (proc / name).write_text(Path("/proc", name).read_text())
    (proc / "self" / "limits").write_text(
        "Max locked memory         unlimited            unlimited            bytes\n"
    )
    return proc


def materialise(tmp_path: Path, case: dict[str, Any]) -> tuple[Path, dict[str, Any]]:
    """The healthy node's /sys under tmp_path and its command outputs (hand-written), with one case's fault."""
    tree = yaml.safe_load((D / "healthy-sys.yaml").read_text())
    files = {**tree["files"], **case.get("sys", {})}
    root = tmp_path / "sys"
    for rel, content in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(content)
    for rel, target in tree["links"].items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(root / target, root / rel)
    outputs: dict[str, Any] = {}
    for name in OUTPUTS.values():
        lines = recorded(name).splitlines()
        for old, new in case.get("replace", {}).get(name, {}).items():
            lines[lines.index(old)] = new
        for n, new in case.get("lines", {}).get(name, {}).items():
            lines[n - 1] = new
        for n, (drop, new) in case.get("splice", {}).get(name, {}).items():
            lines[n - 1 : n - 1 + drop] = new
        lines += case.get("append", {}).get(name, [])
        text = "\n".join(lines) + "\n"
        if name in case.get("exit", {}):  # the tool failed but printed: what a real run keeps
            text = ToolOutput(stdout=text, stderr="", returncode=case["exit"][name])
        outputs[name] = None if name in case.get("unreadable", []) else text
    return root, outputs


def runner(outputs: dict[str, str | None]):
    def run(args: Sequence[str]) -> str | None:
        key = next((a for a in args[1:] if a in OUTPUTS), args[0] if args[0] in OUTPUTS else None)
        return outputs[OUTPUTS[key]] if key else None

    return run


def inventory_of(tmp_path: Path, case: dict[str, Any], copier: Any = None) -> list[dict[str, Any]]:
    root, outputs = materialise(tmp_path, case)
    inv = read_inventory(
        sys_root=root, run=runner(outputs), kernel_log=lambda: outputs["healthy-dmesg.txt"], copier=copier
    )
    return [{"host": "node7", **r} for r in inv.records]


def test_parse_topo_nearest_nic_and_numa() -> None:
    text = recorded("healthy-topo-m.txt")
    assert text.startswith("\t\x1b[4mGPU0\tGPU1")  # the real header bytes: ANSI underline
    topo = parse.parse_topo(text)
    assert len(topo) == 8
    assert topo["GPU0"] == {"nearest_nic": "mlx5_0", "nic_path": "PXB", "numa_node": 0}
    assert topo["GPU6"] == {"nearest_nic": "mlx5_6", "nic_path": "PXB", "numa_node": 1}


def test_parse_gpu_query_and_odd_values() -> None:
    rows = parse.parse_gpu_query(recorded("healthy-query-gpu.csv"))
    assert [r["bus_id"] for r in rows][:2] == ["0000:18:00.0", "0000:2a:00.0"]
    assert rows[3] == {
        "gpu": 3,
        "uuid": "GPU-7c1f0e2a-55d1-4b3e-9a0c-000000000003",
        "bus_id": "0000:5d:00.0",
        "gen": 5,
        "max_gen": 5,
        "width": 16,
        "max_width": 16,
        "ecc_uncorrected": 0,
    }
    odd = parse.parse_gpu_query("0, GPU-1, 00000000:01:00.0, 4, 5, 16, 16, [N/A]\nNo devices were found\n")
    assert odd == [
        {
            "gpu": 0,
            "uuid": "GPU-1",
            "bus_id": "0000:01:00.0",
            "gen": 4,
            "max_gen": 5,
            "width": 16,
            "max_width": 16,
            "ecc_uncorrected": None,
        }
    ]


def test_parse_nvlink_remaps_xids() -> None:
    nv = parse.parse_nvlink_status(
        "GPU 0: NVIDIA H100 (UUID: x)\n\t Link 0: 26.562 GB/s\n\t Link 1: <inactive>\n"
    )
    assert nv == {0: {"links": 2, "inactive": [1], "state": "listed"}}
    assert parse.parse_remapped_rows("00000000:5D:00.0, Yes, No\n") == {
        "0000:5d:00.0": {"pending": True, "failure": False}
    }
    xids = parse.parse_xids(
        "NVRM: Xid (PCI:0000:18:00): 79, pid=1, GPU has fallen off the bus.\n"
        "NVRM: Xid (PCI:0000:2a:00): 31, pid=2, MMU Fault\n"
    )
    assert xids == [
        {"bus_id": "0000:18:00", "xid": 79, "hardware": True},
        {"bus_id": "0000:2a:00", "xid": 31, "hardware": False},
    ]


def test_healthy_node_reads_everything_and_yields_no_finding(tmp_path: Path) -> None:
    recs = inventory_of(tmp_path, {})
    kinds = [r["component"] for r in recs]
    # 8 IB ports + eno1 (ibp25s0 is mlx5_0's IPoIB face, docker0 is virtual), 8 x (link, errors, nvlink)
    assert kinds.count("network port") == 9 and kinds.count("host link") == 8
    assert kinds.count("gpu") == 8 and kinds.count("nvlink") == 8
    port0 = next(r for r in recs if r["device"] == "mlx5_0")
    assert port0["rate_Gbps"] == 400.0 and port0["pcie"] == {
        "bus_id": "0000:19:00.0",
        "upstream": None,  # this fixture's device directories are not linked into /sys/devices
        "gen": 5,
        "max_gen": 5,
        "width": 16,
        "max_width": 16,
        "card_max_gen": 5,
        "card_max_width": 16,
        "slot_max_gen": None,
        "slot_max_width": None,
        "numa_node": 0,
    }
    gpu3 = next(r for r in recs if r["component"] == "gpu" and r["gpu"] == 3)
    assert gpu3["xids"] == [] and gpu3["kernel_log_readable"] is True  # Xid 31 is an application fault
    assert (gpu3["remap_pending"], gpu3["remap_failure"]) == (False, False)  # the driver's "No, No"
    assert (gpu3["fabric_state"], gpu3["fabric_status"]) == ("Completed", "Success")
    link0 = next(r for r in recs if r["component"] == "host link" and r["gpu"] == 0)
    assert (link0["nearest_nic"], link0["nic_path"], link0["numa_node"]) == ("mlx5_0", "PXB", 0)
    assert judge_inventory(recs) == []


@pytest.mark.parametrize("name", sorted(DEGRADED))
def test_each_fault_yields_exactly_its_finding(tmp_path: Path, name: str) -> None:
    case = DEGRADED[name]
    findings = judge_inventory(inventory_of(tmp_path, case))
    assert len(findings) == 1, [f.message for f in findings]
    f, want = findings[0], case["expect"]
    assert (f.component, f.check, f.extra["device"], f.status) == (
        want["component"],
        want["check"],
        want["device"],
        want["status"],
    )
    assert f.hosts == ("node7",) and "node7" in f.message and want["device"] in f.message


def test_messages_say_what_it_should_be(tmp_path: Path) -> None:
    x8 = judge_inventory(inventory_of(tmp_path / "a", DEGRADED["gpu-at-x8"]))[0]
    assert "Gen5 x8, should be Gen5 x16" in x8.message and "0000:2a:00.0" in x8.message
    half = judge_inventory(inventory_of(tmp_path / "b", DEGRADED["port-half-rate"]))[0]
    assert (half.measured, half.expected) == (200.0, 400.0) and "7 sibling" in half.message


class ScriptedCopier:
    """Stands in for the CUDA copy test: fixed figures per GPU, and calls `during` as the real
    one does while copies are in flight (where the link state is read under load)."""

    def __init__(self, figures: dict[int, tuple[float, float, float]]) -> None:
        self.figures, self.calls = figures, []
        self.which: list[dict[str, Any]] = []

    def __call__(self, which: dict[str, Any], nbytes: int, during: Any) -> dict[str, float]:
        gpu = which["gpu"]
        self.calls.append((gpu, nbytes))
        self.which.append(which)
        during()
        h2d, d2h, pageable = self.figures[gpu]
        return {"h2d_pinned_GBps": h2d, "d2h_pinned_GBps": d2h, "h2d_pageable_GBps": pageable}


def test_copy_test_reads_the_link_under_load_and_is_judged_against_the_catalog(tmp_path: Path) -> None:
    # GPU 0 as measured on the lent H100 (Gen5 x16: 55.0 / 55.1 / 17.9 GB/s); GPU 5 at 40 GB/s
    figures = {i: (55.0, 55.1, 17.9) for i in range(8)}
    figures[5] = (40.0, 41.0, 12.0)
    copier = ScriptedCopier(figures)
    recs = inventory_of(tmp_path, {}, copier)
    assert [c[0] for c in copier.calls] == list(range(8)) and copier.calls[0][1] == 1 << 30
    link0 = next(r for r in recs if r["component"] == "host link" and r["gpu"] == 0)
    assert (
        link0["read_under_load"] is True
        and link0["h2d_pinned_GBps"] == 55.0
        and link0["copy_bytes"] == 1 << 30
    )
    findings = judge_inventory(recs)
    copies = [f for f in findings if f.check == "host link copy"]
    assert [f.status for f in copies] == ["ok"] * 5 + ["below_spec"] + ["ok"] * 2
    # Gen5 x16 = 63 GB/s (catalog pcie5-x16); 75% of it is 47.25: 55 passes, 40 does not
    assert copies[0].expected == 63.0 and copies[5].measured == 40.0 and "GPU5" in copies[5].message
    assert [f for f in findings if f.check != "host link copy"] == []


def test_an_idle_gpu_at_a_lower_generation_is_not_a_fault_but_under_load_it_is(tmp_path: Path) -> None:
    idle = {
        "replace": {
            "healthy-query-gpu.csv": {
                "4, GPU-7c1f0e2a-55d1-4b3e-9a0c-000000000004, 00000000:9A:00.0, 5, 5, 16, 16, 0": (
                    "4, GPU-7c1f0e2a-55d1-4b3e-9a0c-000000000004, 00000000:9A:00.0, 1, 5, 16, 16, 0"
                )
            }
        }
    }
    assert judge_inventory(inventory_of(tmp_path / "a", idle)) == []  # read at idle: power saving
    loaded = judge_inventory(
        inventory_of(tmp_path / "b", idle, ScriptedCopier({i: (55.0, 55.0, 17.0) for i in range(8)}))
    )
    assert [(f.check, f.extra["device"]) for f in loaded if f.status == "below_spec"] == [
        ("pcie link trained", "GPU4")
    ]
    assert "Gen1 x16, should be Gen5 x16" in next(f for f in loaded if f.status == "below_spec").message


def test_cpu_only_node_records_its_ports_and_says_what_it_skipped(tmp_path: Path) -> None:
    root, _ = materialise(tmp_path, {})
    inv = read_inventory(sys_root=root, run=lambda args: None)
    assert {r["component"] for r in inv.records} == {"network port"} and len(inv.records) == 9
    assert any(s.startswith("GPUs: nvidia-smi absent") for s in inv.skipped)


def test_the_copier_is_built_only_where_nvidia_smi_shows_a_gpu(tmp_path: Path) -> None:
    # building it imports torch (~2 s of CPU): a CPU node's inventory never pays for it
    built: list[int] = []

    def make() -> None:
        built.append(1)  # and says there is no CUDA torch: the copy test is skipped

    root, _ = materialise(tmp_path / "cpu", {})
    read_inventory(sys_root=root, run=lambda args: None, make_copier=make)
    assert built == []
    root, outputs = materialise(tmp_path / "gpu", {})
    inv = read_inventory(sys_root=root, run=runner(outputs), kernel_log=lambda: "", make_copier=make)
    assert built == [1] and any(s.startswith("host-link copy test: not run") for s in inv.skipped)


def test_spec_port_count_and_a_network_finding_pointing_at_the_port(tmp_path: Path) -> None:
    from reports.shared.spec import parse_spec
    from reports.table.read import RecordSet
    from tests.unit.recordgen import flat, judge_records

    spec = parse_spec(
        {
            "name": "h100",
            "accelerator": "h100-sxm",
            "network": {"inter_node": {"link": "ib-ndr", "count": 8}},
        },
        "spec.yaml",
    )
    host = inventory_of(tmp_path, DEGRADED["port-half-rate"])
    by_check = {f.check: f for f in judge_inventory(host, spec)}
    # 7 ports at 400 Gb/s where the spec advertises 8 x ib-ndr
    assert (
        by_check["ports vs advertised fabric"].measured,
        by_check["ports vs advertised fabric"].expected,
    ) == (7.0, 8.0)
    rs = RecordSet(net=flat("inter-node", "all_reduce", 24.0, ("node7", "node8")), host=host)
    inter = next(f for f in judge_records(rs, spec).findings if f.component == "inter-node network")
    assert inter.status == "below_spec"
    assert "inventory: node7 mlx5_5 port 1 at 200 Gb/s" in inter.message and inter.message.count(". ") == 0
    assert inter.extra["explained_by"] == [
        "node7 mlx5_5 port 1 at 200 Gb/s, its 7 sibling InfiniBand ports at 400 Gb/s",
        "node7: 7 active port(s) at 400 Gb/s, the spec advertises 8 x ib-ndr",
    ]


def test_model_uses_the_measured_host_link() -> None:
    import dataclasses

    from reports.judging.node.inventory import host_link_figures
    from reports.judging.workload.model import Measured, starvation
    from reports.judging.workload.workload import Checkpoint, load_workload
    from tests.unit.test_model import DDP, SPEC

    host = [
        {
            "host": "n1",
            "component": "host link",
            "device": f"GPU{i}",
            "h2d_pinned_GBps": h2d,
            "d2h_pinned_GBps": d2h,
        }
        for i, (h2d, d2h) in enumerate([(55.0, 55.1), (2.0, 28.0)])
    ]
    fig = host_link_figures(host)
    assert (fig["host_h2d_GBps"], fig["host_d2h_GBps"]) == (2.0, 28.0) and "n1 GPU1" in fig["host_link_desc"]
    asyn = dataclasses.replace(
        DDP, checkpoint=Checkpoint(interval_minutes=60, bytes_per_param=14, async_=True)
    )
    rows, _ = starvation(asyn, SPEC, Measured(write_GBps=7.0, **fig))
    # the copy-out: 14e9 B / 16 GPUs = 8.75e8 B per GPU at the measured 28 GB/s D2H = 0.03125 s
    # (at the advertised pcie5-x16 63 GB/s it would be 0.013889 s)
    assert rows[-1].extra["exposed_s"] == pytest.approx(0.03125)
    assert "measured pinned copies" in rows[-1].extra["note"]
    # unet3d needs 25.417 GB/s per node; storage gives 30, the host links 8 x 2 = 16 GB/s: share 1 - 16 / 25.417
    rows, _ = starvation(load_workload("unet3d"), SPEC, Measured(read_GBps_per_node=30.0, **fig))
    assert rows[0].achieved == pytest.approx(16.0) and rows[0].idle_share == pytest.approx(
        1 - 16 / 25.4168, rel=1e-4
    )
    assert "host-to-device leg" in rows[0].extra["note"]


def test_stoker_inventory_then_report_on_a_fixture_tree(
    tmp_path: Path, capsys: Any, monkeypatch: Any
) -> None:
    import json

    from launchers.cli import main
    from reports.table.read import read_records

    root, _ = materialise(tmp_path, DEGRADED["ib-port-down"])
    monkeypatch.setenv("STOKER_RUN_ID", "inv-1")
    monkeypatch.setattr("netbench.inventory.read.run_keep", lambda args: None)  # no nvidia-smi, as on CI
    out = tmp_path / "res"
    # this machine's /proc, but RDMA-ready: its own locked-memory limit would be judged too
    proc = tmp_path / "proc"
    (proc / "self").mkdir(parents=True)
    (proc / "sys" / "kernel").mkdir(parents=True)
    for name in ("cpuinfo", "meminfo", "sys/kernel/osrelease"):
        (proc / name).write_text(Path("/proc", name).read_text())
    (proc / "self" / "limits").write_text(
        "Max locked memory         unlimited            unlimited            bytes\n"
    )
    argv = ["inventory", "--out", str(out), "--no-copy", "--sys-root", str(root), "--proc-root", str(proc)]
    assert main(argv) == 0
    said = capsys.readouterr().out.splitlines()
    assert said[0].endswith(f"9 network port, 1 node -> {out / 'host.jsonl'}")
    assert "skipped: GPUs: nvidia-smi absent" in said[1]
    recs = read_records(out).host
    assert len(recs) == 10 and {r["run_id"] for r in recs} == {"inv-1"}
    (node,) = [r for r in recs if r["component"] == "node"]  # the node itself, from this machine's /proc
    assert node["cpus"] and node["mem_GiB"] and node["kernel"]
    assert main(["report", str(out)]) == 1  # the port down fails the verdict
    verdict = json.loads((out / "verdict.json").read_text())
    assert [(f["component"], f["device"], f["status"]) for f in verdict["findings"]] == [
        ("network port", "mlx5_3", "below_spec")
    ]
    assert (
        "## Node inventory" in (out / "report.md").read_text()
        and "mlx5_3 port 1" in (out / "report.md").read_text()
    )


def test_inventory_claims_its_dir_as_net_and_io_do(tmp_path: Path, capsys: Any, monkeypatch: Any) -> None:
    from launchers.cli import main

    monkeypatch.setattr("netbench.inventory.read.run_keep", lambda args: None)
    (tmp_path / "notes.txt").write_text("mine")
    assert main(["inventory", "--out", str(tmp_path), "--no-copy", "--sys-root", str(tmp_path)]) == 2
    assert "not made by stoker (it holds notes.txt)" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
    # the first phase of torchrun.sh/mpirun.sh claims the dir; the next phase of the run adds to it
    monkeypatch.setenv("STOKER_RUN_ID", "inv-2")
    out = tmp_path / "res"
    assert main(["inventory", "--out", str(out), "--no-copy", "--sys-root", str(tmp_path)]) == 0
    assert (out / ".stoker-run").read_text() == "inv-2\n"


def test_pcie_state_names_the_bridge_above(tmp_path: Path) -> None:
    from netbench.inventory.read import pcie_state

    dev = tmp_path / "devices" / "pci0000:00" / "0000:00:01.0" / "0000:18:00.0"
    dev.mkdir(parents=True)
    for name, text in (
        ("current_link_speed", "16.0 GT/s PCIe\n"),
        ("max_link_speed", "32.0 GT/s PCIe\n"),
        ("current_link_width", "16\n"),
        ("max_link_width", "16\n"),
        ("numa_node", "-1\n"),
    ):
        (dev / name).write_text(text)
    (tmp_path / "bus" / "pci" / "devices").mkdir(parents=True)
    os.symlink(dev, tmp_path / "bus" / "pci" / "devices" / "0000:18:00.0")
    assert pcie_state(tmp_path, "0000:18:00.0") == {
        "bus_id": "0000:18:00.0",
        "upstream": "0000:00:01.0",
        "gen": 4,
        "max_gen": 5,  # the bridge directory says nothing of its own maximum: the card's stands
        "width": 16,
        "max_width": 16,
        "card_max_gen": 5,
        "card_max_width": 16,
        "slot_max_gen": None,
        "slot_max_width": None,
        "numa_node": None,
    }


def test_nvlink_unused_on_the_whole_node_is_not_a_fault() -> None:
    pcie_cards = [
        {"host": "h", "component": "nvlink", "device": f"GPU{i}", "links": 2, "inactive": [0, 1]}
        for i in range(2)
    ]
    assert judge_inventory(pcie_cards) == []
    pcie_cards[0]["inactive"] = []
    (f,) = judge_inventory(pcie_cards)
    assert (f.extra["device"], f.measured, f.expected) == ("GPU1", 0.0, 2.0)


def test_a_hardware_xid_names_its_gpu(tmp_path: Path) -> None:
    root, outputs = materialise(tmp_path, {})
    log = (
        outputs["healthy-dmesg.txt"] or ""
    ) + "[91822.1] NVRM: Xid (PCI:0000:ab:00): 79, pid=0, GPU has fallen off the bus.\n"
    inv = read_inventory(sys_root=root, run=runner(outputs), kernel_log=lambda: log)
    (f,) = judge_inventory([{"host": "node7", **r} for r in inv.records])
    assert (f.check, f.extra["device"]) == ("gpu errors", "GPU5") and "hardware Xid 79" in f.message


def test_node_record_from_real_proc_bytes() -> None:
    from netbench.inventory.node import parse_node

    # lines as /proc/cpuinfo and /proc/meminfo print them on Linux x86_64 (format: the kernel's
    # arch/x86/kernel/cpu/proc.c and fs/proc/meminfo.c; hand-written values)
    cpuinfo = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\n\nprocessor\t: 1\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\n"
    meminfo = "MemTotal:       2113323008 kB\nMemFree:        2000000000 kB\n"
    rec = parse_node(cpuinfo, meminfo, "6.8.0-45-generic\n", 2)
    assert rec == {
        "component": "node", "cpu_model": "Intel(R) Xeon(R) Platinum 8480+", "cpus": 2,
        "mem_GiB": 2015.42, "numa_nodes": 2, "kernel": "6.8.0-45-generic", "memlock": None, "gdr": None,
    }  # fmt: skip
    # nothing readable: the record still says the node was read, every fact None
    assert parse_node(None, None, None, None) == {
        "component": "node", "cpu_model": None, "cpus": None, "mem_GiB": None, "numa_nodes": None, "kernel": None,
        "memlock": None, "gdr": None,
    }  # fmt: skip
