"""Xids when dmesg is restricted: the inventory and the soak's counters read the journal's
kernel messages instead (`journalctl -k`). The journal lines are hand-written in journalctl's
`-o short` format ("Mon DD HH:MM:SS host kernel: message") around the driver's Xid line."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from netbench.inventory.counters import read_snapshot
from netbench.inventory.hardware import ToolOutput
from netbench.inventory.kernel_log import read_kernel_log
from netbench.inventory.read import read_inventory
from tests.unit.test_inventory import materialise, runner

JOURNAL = (
    "Nov 26 00:12:01 node7 kernel: Linux version 6.8.0-49-generic (buildd@lcy02-amd64-103)\n"
    "Nov 26 00:14:09 node7 kernel: NVRM: Xid (PCI:0000:5d:00): 79, pid=41882, name=python, "
    "GPU has fallen off the bus.\n"
)
REFUSED = ToolOutput(
    stdout="", stderr="dmesg: read kernel buffer failed: Operation not permitted\n", returncode=1
)


def test_the_journal_answers_when_dmesg_is_refused() -> None:
    asked: list[list[str]] = []

    def text_of(argv: Sequence[str]) -> str | None:
        asked.append(list(argv))
        return JOURNAL if argv[0] == "journalctl" else None

    assert read_kernel_log(text_of) == JOURNAL
    assert asked == [["dmesg"], ["journalctl", "-k", "--no-pager", "-q", "-o", "short"]]


def test_an_empty_journal_is_no_answer_but_an_empty_dmesg_is() -> None:
    assert read_kernel_log(lambda argv: "" if argv[0] == "journalctl" else None) is None
    assert read_kernel_log(lambda argv: "" if argv[0] == "dmesg" else JOURNAL) == ""


def test_inventory_reads_xids_from_the_journal_when_dmesg_is_restricted(tmp_path: Path) -> None:
    root, outputs = materialise(tmp_path, {})
    base = runner(outputs)

    def run(args: Sequence[str]) -> ToolOutput | str | None:
        if args[0] == "dmesg":
            return REFUSED
        if args[0] == "journalctl":
            return JOURNAL
        return base(args)

    inv = read_inventory(sys_root=root, run=run, copier=None)
    gpu = next(
        r for r in inv.records if r["component"] == "gpu" and r.get("bus_id", "").startswith("0000:5d")
    )
    assert gpu["kernel_log_readable"] is True
    assert 79 in gpu["xids"]


def test_soak_counters_count_journal_xids() -> None:
    query = "0, 34, 71.28, 0x0000000000000000, 0, 0"  # the GPU_QUERY columns

    def run(args: Sequence[str]) -> str | None:
        if args[0] == "nvidia-smi":
            return query
        return JOURNAL if args[0] == "journalctl" else None

    snap = read_snapshot(sys_root="/nonexistent", run=run)
    assert any(v.get("xid_hardware") == 1 for v in snap.values()), snap


def test_an_unreadable_kernel_log_names_both_sources_and_each_fix(tmp_path: Path) -> None:
    """dmesg refused and the journal empty (a user it does not let read): the finding says both
    were tried, and that the journal's group is a fix as well as root or dmesg_restrict."""
    from reports.judging.node.inventory import judge_inventory

    root, outputs = materialise(tmp_path, {})
    base = runner(outputs)

    def run(args: Sequence[str]) -> ToolOutput | str | None:
        if args[0] == "dmesg":
            return REFUSED
        if args[0] == "journalctl":
            return ""  # what journalctl prints to a user outside systemd-journal/adm: nothing, exit 0
        return base(args)

    inv = read_inventory(sys_root=root, run=run, copier=None)
    assert not any(r.get("kernel_log_readable") for r in inv.records if r["component"] == "gpu")
    (f,) = [f for f in judge_inventory(inv.records) if f.check == "Xid events"]
    assert f.status == "no_reference"
    assert "neither `dmesg` nor `journalctl -k` answered" in f.message
    assert "systemd-journal (or adm) group" in f.message and "kernel.dmesg_restrict=0" in f.message
