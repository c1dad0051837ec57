"""Causes named from NCCL's own words and the tables' correctness columns
(reports/judging/network/diagnosis.py), at the level of the answer: `stoker report DIR --spec` on real
outputs of the field corpus (tests/data/field/, sources in its manifest.yaml)."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from typing import Any

import yaml

from reports.pipeline import collect

FIELD = Path(__file__).resolve().parents[1] / "data" / "field"


def _verdict(tmp: Path, name: str, spec: dict[str, Any] | None) -> dict[str, Any]:
    d = tmp / "results"
    d.mkdir()
    shutil.copyfile(FIELD / name, d / name)
    spec_file = None
    if spec is not None:
        spec_file = tmp / "spec.yaml"
        spec_file.write_text(yaml.safe_dump({"name": "t", **spec}))
    return collect(d, str(spec_file) if spec_file else None).verdict


def _failing(v: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for f in v["findings"] if f["status"] in ("incorrect", "misconfigured", "below_spec")]


IB_SPEC = {
    "accelerator": "H100-SXM",
    "gpus_per_node": 8,
    "network": {"inter_node": {"link": "ib-ndr", "count": 8}},
}


def test_sockets_on_an_infiniband_spec_fail_the_inter_node_network_naming_sockets(tmp_path: Path) -> None:
    v = _verdict(tmp_path, "nccl-451-container-ibv-open-failed-socket.log", IB_SPEC)
    (f,) = [f for f in _failing(v) if f["component"] == "inter-node network"]
    assert v["verdict"] == "fail" and f["status"] == "misconfigured" and f["cause"] == "socket_fallback"
    assert "socket" in f["message"].lower() and "ib-ndr" in f["message"]
    # the line that shows it, quoted with its file and line number
    assert (
        f["cause_line"] == "nccl-451-container-ibv-open-failed-socket.log:6: NCCL INFO Using network Socket"
    )


def test_a_socket_run_whose_rdma_device_would_not_open_fails_without_a_spec(tmp_path: Path) -> None:
    v = _verdict(tmp_path, "nccl-451-container-ibv-open-failed-socket.log", None)
    causes = {f.get("cause") for f in _failing(v)}
    # the WARNs are the fallback's evidence, not an error of the run's data
    assert v["verdict"] == "fail" and causes == {"socket_fallback"}


def test_wrong_elements_fail_naming_op_and_size(tmp_path: Path) -> None:
    v = _verdict(tmp_path, "nccl-tests-369-gh200-2node-wrong-1mb.log", None)
    wrong = [f for f in v["findings"] if f["status"] == "incorrect"]
    assert v["verdict"] == "fail" and wrong, v["findings"]
    f = wrong[0]
    # gpu-1-1 and gpu-1-7: two hosts, so the inter-node network; 1 MiB is the first size wrong
    assert f["component"] == "inter-node network" and f["check"] == "all_reduce correctness"
    assert f["sizes_wrong"][0] == 1048576 and "1,048,576 bytes" in f["message"]


def test_gpu_direct_rdma_disabled_on_its_hcas_fails(tmp_path: Path) -> None:
    v = _verdict(tmp_path, "nccl-1676-dgx-os-gdr-disabled-lines.log", None)
    (f,) = [f for f in _failing(v) if f.get("cause") == "gdr_off"]
    assert f["component"] == "inter-node network" and "GPU Direct RDMA Disabled for HCA" in f["message"]


def test_a_busbw_collapse_across_racks_fails_the_inter_node_network(tmp_path: Path) -> None:
    # nccl#1453: 29.50 / 28.14 GB/s (out-of-place / in-place, median 28.82) at 32 MiB, then
    # 5.27 at 64 MiB and <= 5.33 to 512 MiB; 24 ranks on a spec of 8 GPUs per node: 3 nodes
    v = _verdict(
        tmp_path,
        "nccl-1453-h100-3node-cross-rack-rows.log",
        {"accelerator": "H100-SXM", "gpus_per_node": 8, "network": {"intra_node": "nvlink4"}},
    )
    (f,) = [f for f in _failing(v) if f["check"] == "all_reduce busbw collapse"]
    assert (
        f["component"] == "inter-node network" and f["expected"] == 28.82 and f["collapse_bytes"] == 67108864
    )


def test_a_table_that_stopped_under_a_mebibyte_is_not_judged_against_the_link(tmp_path: Path) -> None:
    # nccl#949: rows of 8 to 256 bytes only (busbw 0.00-0.01): latency, not NVLink
    v = _verdict(tmp_path, "nccl-949-a100-vm-after-acs-fix.log", {"accelerator": "A100-SXM"})
    assert v["verdict"] != "fail" and not _failing(v)


def test_nccl_saying_it_found_no_rdma_library_is_not_an_error(tmp_path: Path) -> None:
    # nccl-tests#82: NCCL_DEBUG=WARN, a TCP run on purpose: "Failed to open libibverbs.so[.1]"
    v = _verdict(tmp_path, "nccl-tests-82-v100-2node-tcp-broadcast-warn.log", None)
    assert not [f for f in v["findings"] if f["status"] == "incorrect"], v["findings"]


def test_nccl_tests_own_failure_line_fails_the_run(tmp_path: Path) -> None:
    # nccl-tests#294 line 4: "h100-4: Test NCCL failure common.cu:1057 'internal error / '"
    v = _verdict(tmp_path, "nccl-tests-294-h100-sharp-plugin-test-failure.log", None)
    (f,) = [f for f in v["findings"] if f["status"] == "incorrect"]
    assert f["cause"] == "nccl_error" and f["component"] == "inter-node network"  # NCCL chose IB
    assert f["cause_line"].startswith("nccl-tests-294-h100-sharp-plugin-test-failure.log:4: ")
    assert "Test NCCL failure" in f["cause_line"]


def test_a_gloo_sweep_inside_one_node_is_never_a_collapse() -> None:
    """2 gloo ranks on one CPU machine: 1.12 GB/s at 1 MiB, 0.50 at 4 MiB (the quick profile on
    a busy 2-core VM): no fabric path to break down, no finding; the same curve from two nodes is."""
    from reports.evidence.sweeps import Sweep
    from reports.judging.network.diagnosis import collapse_findings

    one = Sweep(scope="world", op="all_gather", backend="gloo", ranks=2, nodes=1, groups=1,
                sizes=(1 << 20, 4 << 20), busbw=(1.12, 0.50), hosts=("vm",))  # fmt: skip
    assert collapse_findings({("world", "all_gather"): one}) == []
    two = dataclasses.replace(one, nodes=2, hosts=("a", "b"))
    assert [f.expected for f in collapse_findings({("world", "all_gather"): two})] == [1.12]
