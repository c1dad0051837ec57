"""The inventory on nvidia-smi and kernel-log output in the real formats a GPU node prints (issue
23): ANSI codes in `topo -m`, a lost GPU (non-zero exit, partial output kept, Xid 79 read from the
kernel log), every NVLink down, MIG mode, No/Yes flags, `pcie.link.gen.gpucurrent` with its
fallback, `fabric.status`, NVSwitch SXids, Xids 61/62/140/154, and a NIC's maximum link speed
bounded by its slot through a sysfs tree linked into /sys/devices as the kernel links it.
Where each format comes from: tests/data/inventory/*.txt|csv headers and degraded.yaml."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from netbench.inventory import parse
from netbench.inventory.hardware import ToolOutput
from netbench.inventory.read import pcie_state, read_inventory
from reports.judging.node.inventory import judge_inventory
from tests.unit.test_inventory import DEGRADED, materialise, rdma_ready_proc, runner

ROOT = Path(__file__).resolve().parents[2]
# "Nvlink queries are not supported for Devices in MIG mode": nvidia-smi nvlink -s on an H100 and
# an H200 in MIG mode, driver 590.48.01 (utkuozdemir/nvidia_gpu_exporter internal/captures/
# linux-x86_64__nvidia-h100-mig__590.48.01.txt and ...h200-mig...)
MIG_LINE = "Nvlink queries are not supported for Devices in MIG mode"
ALL_DOWN = "NVML: Unable to retrieve NVLink information as all links are inActive"  # leptonai/gpud#1085


def test_parsers_read_the_real_sentences() -> None:
    nv = parse.parse_nvlink_status(
        "GPU 0: NVIDIA B200 (UUID: GPU-xxx)\n" + ALL_DOWN + "\n"
        "GPU 1: NVIDIA H200 (UUID: GPU-00000000-0000-0000-0000-000000000000)\n" + MIG_LINE + "\n"
        "GPU 2: NVIDIA L40S (UUID: GPU-00000000-0000-0000-0000-000000000000)\n"
        "Device does not have or support Nvlink\n"
    )
    assert {i: n["state"] for i, n in nv.items()} == {0: "all inactive", 1: "mig", 2: "none"}
    assert parse.parse_lost_gpus(
        "0, GPU-a, 00000000:18:00.0, 5, 5, 16, 16, 0\n"
        "Unable to determine the device handle for GPU0000:9A:00.0: Unknown Error\n"
        "Unable to determine the device handle for GPU 0000:02:00.0: GPU is lost. Reboot the system to recover this GPU\n"
    ) == [
        {"bus_id": "0000:9a:00.0", "reason": "Unknown Error"},
        {"bus_id": "0000:02:00.0", "reason": "GPU is lost. Reboot the system to recover this GPU"},
    ]
    # real 590.48.01 query values: fabric "Completed, Success"; remapped rows "No"
    assert parse.parse_fabric("0, Completed, Success\n1, N/A, N/A\n") == {
        0: {"state": "Completed", "status": "Success"}
    }
    assert parse.parse_remapped_rows("00000000:00:09.0, No, No\n")["0000:00:09.0"] == {
        "pending": False,
        "failure": False,
    }


def test_xids_of_recent_catalogues_and_the_multiline_fallen_off_the_bus() -> None:
    log = (
        "NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch 00000001 caused by previous Xid 149\n"
        "NVRM: Xid (PCI:0000:18:00): 61, pid=0, Internal micro-controller breakpoint/warning\n"
        "NVRM: Xid (PCI:0000:2a:00): 62, pid=0, Internal micro-controller halt\n"
        "NVRM: Xid (PCI:0000:3a:00): 140, pid=0, Unrecovered ECC Error\n"
        "NVRM: Xid (PCI:0000:5d:00): 154, GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)\n"
        # NVIDIA/NVSentinel#155: a recent driver's report without an Xid line
        "[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0\n"
        "               NVRM: (PCI ID: 10de:26b5) installed in this system has\n"
        "               NVRM: fallen off the bus and is not responding to commands.\n"
    )
    got = [(x["bus_id"], x["xid"], x["hardware"]) for x in parse.parse_xids(log)]
    assert got == [
        ("0000:dc:00", 45, False),
        ("0000:18:00", 61, True),
        ("0000:2a:00", 62, True),
        ("0000:3a:00", 140, True),
        ("0000:5d:00", 154, True),
        ("0000:b3:00", 79, True),
    ]


def test_sxids_fatal_only_where_a_line_says_so() -> None:
    log = "\n".join(DEGRADED["nvswitch-fatal-sxid"]["append"]["healthy-dmesg.txt"])
    assert parse.parse_sxids(log) == [
        {"switch": "nvidia-nvswitch1", "bus_id": "0000:02:00.0", "sxid": 22013, "fatal": False},
        {"switch": "nvidia-nvswitch3", "bus_id": "0000:04:00.0", "sxid": 24007, "fatal": True},
    ]


def test_mig_mode_is_not_an_nvlink_fault_and_says_so(tmp_path: Path) -> None:
    case = {"splice": {"healthy-nvlink-s.txt": {40: [18, [MIG_LINE]]}}}
    root, outputs = materialise(tmp_path, case)
    inv = read_inventory(sys_root=root, run=runner(outputs), kernel_log=lambda: outputs["healthy-dmesg.txt"])
    recs = [{"host": "node7", **r} for r in inv.records]
    assert judge_inventory(recs) == []
    assert "GPU2" not in {r["device"] for r in recs if r["component"] == "nvlink"}
    assert any("MIG mode" in s and "GPU 2" in s for s in inv.skipped)


def test_every_gpu_lost_is_not_nvidia_smi_absent(tmp_path: Path) -> None:
    # no healthy row at all, the message on stderr, exit non-zero: the kernel log is still read
    root, outputs = materialise(tmp_path, {})
    msg = "Unable to determine the device handle for GPU0000:18:00.0: Unknown Error\n"

    def run(args: Sequence[str]) -> ToolOutput | str | None:
        if any(a.startswith("--query-gpu=index,uuid") for a in args):
            return ToolOutput(stdout="", stderr=msg, returncode=255)
        return runner(outputs)(args)

    log = (
        outputs["healthy-dmesg.txt"] or ""
    ) + "NVRM: Xid (PCI:0000:18:00): 79, GPU has fallen off the bus.\n"
    inv = read_inventory(sys_root=root, run=run, kernel_log=lambda: log)
    assert not any("nvidia-smi absent" in s for s in inv.skipped)
    (f,) = judge_inventory([{"host": "n1", **r} for r in inv.records])
    assert f.extra["device"] == "GPU 0000:18:00.0" and "lost" in f.message and "Xid 79" in f.message


def test_an_old_driver_without_gpucurrent_is_asked_again(tmp_path: Path) -> None:
    root, outputs = materialise(tmp_path, {})
    asked: list[str] = []

    def run(args: Sequence[str]) -> ToolOutput | str | None:
        q = next((a for a in args if a.startswith("--query-gpu=")), "")
        asked.append(q)
        if "gpucurrent" in q or "fabric.status" in q:
            field = "pcie.link.gen.gpucurrent" if "gpucurrent" in q else "fabric.status"
            return ToolOutput(
                stdout=f'Field "{field}" is not a valid field to query.\n\n', stderr="", returncode=2
            )
        if "pcie.link.gen.current" in q:
            return outputs["healthy-query-gpu.csv"]
        if q == "--query-gpu=index,fabric.state":
            return "0, Completed\n"
        return runner(outputs)(args)

    inv = read_inventory(sys_root=root, run=run, kernel_log=lambda: outputs["healthy-dmesg.txt"])
    assert sum(r["component"] == "host link" for r in inv.records) == 8
    assert "--query-gpu=" + ",".join(parse.LEGACY_GPU_QUERY) in asked
    gpu0 = next(r for r in inv.records if r["component"] == "gpu" and r["gpu"] == 0)
    assert (gpu0["fabric_state"], gpu0["fabric_status"]) == ("Completed", None)


def _real_layout(root: Path, nic_max: str, slot_max: str, now: str) -> None:
    """A ConnectX NIC under a root port as the kernel links it (ls -l /sys/bus/pci/devices on any
    Linux host: '0000:00:03.0 -> ../../../devices/pci0000:00/0000:00:03.0'; /sys/class/infiniband/X
    -> ../../devices/.../infiniband/X with device -> ../../../<bdf>). Attribute formats:
    Documentation/ABI/testing/sysfs-bus-pci (max_link_speed '32.0 GT/s PCIe')."""
    port = root / "devices" / "pci0000:17" / "0000:17:02.0"
    nic = port / "0000:19:00.0"
    ib = nic / "infiniband" / "mlx5_0"
    (ib / "ports" / "1").mkdir(parents=True)
    for d, files in (
        (port, {"max_link_speed": slot_max, "max_link_width": "16\n", "current_link_speed": now}),
        (
            nic,
            {
                "max_link_speed": nic_max,
                "max_link_width": "16\n",
                "current_link_speed": now,
                "current_link_width": "16\n",
                "numa_node": "0\n",
            },
        ),
        (
            ib / "ports" / "1",
            {
                "state": "4: ACTIVE\n",
                "phys_state": "5: LinkUp\n",
                "rate": "400 Gb/sec (4X NDR)\n",
                "link_layer": "InfiniBand\n",
            },
        ),
    ):
        for name, text in files.items():
            (d / name).write_text(text)
    (root / "bus" / "pci" / "devices").mkdir(parents=True)
    os.symlink("../../../devices/pci0000:17/0000:17:02.0/0000:19:00.0", root / "bus/pci/devices/0000:19:00.0")
    os.symlink("../../../0000:19:00.0", ib / "device")
    (root / "class" / "infiniband").mkdir(parents=True)
    os.symlink(
        "../../devices/pci0000:17/0000:17:02.0/0000:19:00.0/infiniband/mlx5_0",
        root / "class/infiniband/mlx5_0",
    )


def test_a_gen5_nic_in_a_gen4_slot_is_at_its_slots_maximum(tmp_path: Path) -> None:
    gen4, gen5 = "16.0 GT/s PCIe\n", "32.0 GT/s PCIe\n"
    _real_layout(tmp_path / "a", nic_max=gen5, slot_max=gen4, now=gen4)
    st = pcie_state(tmp_path / "a", "0000:19:00.0")
    assert (st["upstream"], st["gen"], st["max_gen"], st["card_max_gen"], st["slot_max_gen"]) == (
        "0000:17:02.0",
        4,
        4,
        5,
        4,
    )
    inv = read_inventory(sys_root=tmp_path / "a", run=lambda args: None, kernel_log=lambda: "")
    assert judge_inventory([{"host": "n1", **r} for r in inv.records]) == []  # not "reseat the card"
    # the same card in a Gen5 slot, trained at Gen4: that is a fault
    _real_layout(tmp_path / "b", nic_max=gen5, slot_max=gen5, now=gen4)
    inv = read_inventory(sys_root=tmp_path / "b", run=lambda args: None, kernel_log=lambda: "")
    (f,) = judge_inventory([{"host": "n1", **r} for r in inv.records])
    assert f.extra["device"] == "mlx5_0" and "should be Gen5" in f.message


FAKE_NVIDIA_SMI = """#!{python}
# A stand-in nvidia-smi for one test: prints the fixture bytes for each command (ANSI topo
# header, GPU 2 with every NVLink down, GPU 4 lost with exit 255 and its error line)
import sys
from pathlib import Path
out = Path({outdir!r})
args = sys.argv[1:]
name = "topo" if args[:1] == ["topo"] else "nvlink" if args[:1] == ["nvlink"] else \\
    "remap" if args and args[0].startswith("--query-remapped-rows") else \\
    "fabric" if args and args[0].startswith("--query-gpu=index,fabric") else "query"
sys.stdout.write((out / name).read_text())
sys.exit(255 if name == "query" else 0)
"""


def test_stoker_inventory_names_nics_dead_links_and_the_lost_gpu(tmp_path: Path) -> None:
    # the real CLI in a real process, with nvidia-smi and dmesg on PATH printing real-format bytes
    case = {
        "replace": DEGRADED["gpu-lost"]["replace"],
        "splice": DEGRADED["nvlink-all-inactive"]["splice"],
        "append": DEGRADED["gpu-lost"]["append"],
    }
    root, outputs = materialise(tmp_path, case)
    bins, data = tmp_path / "bin", tmp_path / "outputs"
    bins.mkdir()
    data.mkdir()
    for key, fname in (
        ("topo", "healthy-topo-m.txt"),
        ("nvlink", "healthy-nvlink-s.txt"),
        ("remap", "healthy-remapped-rows.csv"),
        ("fabric", "healthy-fabric.csv"),
        ("query", "healthy-query-gpu.csv"),
    ):
        (data / key).write_text(outputs[fname])
    (bins / "nvidia-smi").write_text(FAKE_NVIDIA_SMI.format(python=sys.executable, outdir=str(data)))
    (bins / "dmesg").write_text(f"#!/bin/sh\nexec cat {tmp_path / 'dmesg.txt'}\n")
    (tmp_path / "dmesg.txt").write_text(outputs["healthy-dmesg.txt"])
    for b in bins.iterdir():
        b.chmod(0o755)
    assert "\x1b[4m" in (data / "topo").read_text() and "Unable to determine" in (data / "query").read_text()
    env = {**os.environ, "PATH": f"{bins}:{os.environ['PATH']}", "STOKER_HOSTNAME": "node7"}
    res = tmp_path / "res"
    got = subprocess.run(
        [
            sys.executable,
            "-m",
            "launchers.cli",
            "inventory",
            "--out",
            str(res),
            "--no-copy",
            "--sys-root",
            str(root),
            "--proc-root",
            str(rdma_ready_proc(tmp_path)),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert got.returncode == 0, got.stderr
    assert (
        "nvidia-smi absent" not in got.stdout and "GPU 0000:9a:00.0: nvidia-smi cannot open it" in got.stdout
    )
    recs = [json.loads(line) for line in (res / "host.jsonl").read_text().splitlines()]
    links = {r["device"]: r for r in recs if r["component"] == "host link"}
    assert links["GPU0"]["nearest_nic"] == "mlx5_0" and links["GPU7"]["nic_path"] == "PXB"
    findings = {(f.check, f.extra["device"]): f for f in judge_inventory(recs)}
    assert set(findings) == {("nvlink active", "GPU2"), ("gpu errors", "GPU 0000:9a:00.0")}
    assert "hardware Xid 79" in findings[("gpu errors", "GPU 0000:9a:00.0")].message


def test_a_failed_dmesg_is_unreadable_not_a_log(tmp_path: Path) -> None:
    # dmesg under kernel.dmesg_restrict=1 exits 1 with its complaint on stderr: not a kernel log
    root, outputs = materialise(tmp_path, {})

    def run(args: Sequence[str]) -> ToolOutput | str | None:
        if args[0] == "dmesg":
            return ToolOutput(
                stdout="", stderr="dmesg: read kernel buffer failed: Operation not permitted\n", returncode=1
            )
        return runner(outputs)(args)

    inv = read_inventory(sys_root=root, run=run)
    assert any(s.startswith("kernel log (Xid events): not readable") for s in inv.skipped)
    assert {r["kernel_log_readable"] for r in inv.records if r["component"] == "gpu"} == {False}
