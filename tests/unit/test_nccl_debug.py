"""NCCL's own lines read into facts (reports/ingest/nccl_debug.py), and what a table with no
preamble, no header or no device lines says of itself (reports/ingest/nccl_records.py,
nccl_log.py), on real outputs of the field corpus (tests/data/field/, sources in its
manifest.yaml). Expected values are read off the files by hand."""

from __future__ import annotations

from pathlib import Path

from reports.ingest.importers import import_file
from reports.ingest.nccl_debug import DebugFacts, transport_of
from reports.ingest.nccl_log import strip_prefix

FIELD = Path(__file__).resolve().parents[1] / "data" / "field"


def _facts(text: str) -> DebugFacts:
    f = DebugFacts()
    for n, line in enumerate(text.split("\n"), 1):
        body = strip_prefix(line).strip()
        if "NCCL INFO" in body or "NCCL WARN" in body or "Out of bounds" in body:
            f.add(n, body)
    return f


def test_a_container_that_could_not_open_its_rdma_device_fell_back_to_sockets() -> None:
    # nccl#451: the WARNs at lines 2-3, "No device found" at 4, "Using network Socket" at 6
    f = _facts((FIELD / "nccl-451-container-ibv-open-failed-socket.log").read_text())
    assert f.network == {"line": 6, "text": "NCCL INFO Using network Socket", "name": "Socket"}
    assert f.no_ib_device is not None and f.no_ib_device["line"] == 4
    assert [w["line"] for w in f.warns] == [2, 3] and f.warn_count == 2
    assert f.env["NCCL_IB_DISABLE"]["value"] == "0."  # as printed, with NCCL's full stop
    assert f.plugin_missing is not None and f.plugin_missing["line"] == 8


def test_shape_hosts_and_transports_of_info_lines() -> None:
    text = "\n".join(
        [
            "[1,0]<stdout>:gpu-a01:4100:4180 [0] NCCL INFO comm 0x5555 rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0",
            "gpu-a02:4108:4190 [0] NCCL INFO Channel 00/0 : 7[7] -> 8[0] [receive] via NET/IB/0/GDRDMA",
            "gpu-a02:4108:4190 [0] NCCL INFO Channel 00/0 : 8[0] -> 9[1] via P2P/CUMEM/read",
            "gpu-a02:4108:4190 [0] NCCL INFO Channel 01/0 : 8[0] -> 9[1] via P2P/CUMEM/read",
            "gpu-a01:4100:4180 [0] NCCL INFO NVLS multicast support is not available on dev 0",
        ]
    )
    f = _facts(text)
    assert (f.nranks, f.nnodes, f.local_ranks) == (16, 2, 8)
    assert f.hosts == {"gpu-a01", "gpu-a02"}
    assert dict(f.transports) == {"NET/IB/GDRDMA": 1, "P2P/CUMEM": 2}
    assert f.nvls is not None and f.nvls["available"] is False and f.nvls["line"] == 5


def test_transport_kinds() -> None:
    assert transport_of("P2P/IPC/read") == "P2P/IPC"
    assert transport_of("P2P/direct pointer") == "P2P/direct"
    assert transport_of("SHM/direct/direct") == "SHM"
    assert transport_of("NET/IB/0/GDRDMA") == "NET/IB/GDRDMA"
    assert transport_of("NET/IB/1(0)/GDRDMA") == "NET/IB/GDRDMA"
    assert transport_of("NET/Socket/0") == "NET/Socket"


def test_a_log_of_nccl_lines_alone_is_read_as_nccl_facts() -> None:
    got = import_file(FIELD / "nccl-451-container-ibv-open-failed-socket.log")
    assert not got.net and len(got.manifests) == 1
    assert got.manifests[0]["nccl_debug"]["network"]["name"] == "Socket"


def test_rows_pasted_without_header_or_preamble_are_read() -> None:
    # nccl#1453: rows only, each tagged `[0]` at its start and inside (`-1[0]`); all_reduce
    # from redop sum / root -1 / count = size / 4; 16.20 / 8.45 = 1.917 = 2(n-1)/n -> n = 24
    got = import_file(FIELD / "nccl-1453-h100-3node-cross-rack-rows.log")
    assert got.net and {r.op for r in got.net} == {"all_reduce"} and {r.ranks for r in got.net} == {24}
    first = next(r for r in got.net if r.bytes == 8388608 and not r.in_place)
    assert (first.time_s, first.algbw_GBps, first.busbw_GBps) == (992.6e-6, 8.45, 16.20)
    assert set(first.extra["inferred"]) == {"columns", "op", "ranks"}


def test_wrong_elements_of_a_real_table_are_kept() -> None:
    # nccl-tests#369 line 29: 1048576 bytes, #wrong 96 out-of-place and 32 in-place
    got = import_file(FIELD / "nccl-tests-369-gh200-2node-wrong-1mb.log")
    at = {(r.bytes, r.in_place): r.wrong for r in got.net}
    assert at[(1048576, False)] == 96 and at[(1048576, True)] == 32 and at[(2097152, False)] == 0
