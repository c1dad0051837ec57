"""NCCL's account of stoker's own GPU runs: the environment `stoker net` gives NCCL
(netbench/nccl_env.py) and the report reading DIR/nccl-debug/ (reports/ingest/nccl_debug_files.py)
into the same diagnosis as an imported log's NCCL lines."""

from __future__ import annotations

from pathlib import Path

import yaml

from netbench.nccl_env import debug_env
from reports.pipeline import collect
from reports.shared.records import NCCL_DEBUG_DIR, NET_FILE, RecordWriter
from tests.unit.recordgen import net

FIELD = Path(__file__).resolve().parents[1] / "data" / "field"


def test_every_gpu_rank_writes_its_nccl_lines_into_the_results_dir() -> None:
    env = debug_env({}, "/res/run1")
    assert env == {
        "NCCL_DEBUG": "INFO",
        "NCCL_DEBUG_SUBSYS": "INIT,NET,ENV",
        "NCCL_DEBUG_FILE": "/res/run1/nccl-debug/%h.%p.log",
    }


def test_the_users_choice_of_where_nccl_speaks_stands() -> None:
    assert debug_env({"NCCL_DEBUG": "WARN"}, "/res") == {}
    assert debug_env({"NCCL_DEBUG_FILE": "/tmp/n.%h"}, "/res") == {}
    assert debug_env({}, None) == {}


def test_the_report_names_sockets_from_stokers_own_nccl_files(tmp_path: Path) -> None:
    d = tmp_path / "run"
    d.mkdir()
    hosts = ("gpu01", "gpu02")
    with RecordWriter(d / NET_FILE) as w:  # a 2-node sweep of 16 ranks at 11 GB/s
        for r in [net("world", "all_reduce", 2**k, 11.0, hosts, ranks=16) for k in range(20, 31)]:
            w.write(r)
    # the first two lines of nccl-tests-188 (recorded; its manifest.yaml names the source),
    # as one rank's NCCL_DEBUG_FILE holds them
    real = (FIELD / "nccl-tests-188-mixed-socket-ib.log").read_text().split("\n")[:2]
    (d / NCCL_DEBUG_DIR).mkdir()
    (d / NCCL_DEBUG_DIR / "gpu01.16902.log").write_text("\n".join(real) + "\n")
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        yaml.safe_dump(
            {
                "name": "s",
                "accelerator": "H100-SXM",
                "gpus_per_node": 8,
                "network": {"inter_node": {"link": "ib-ndr", "count": 8}},
            }
        )
    )
    v = collect(d, str(spec)).verdict
    (f,) = [f for f in v["findings"] if f["status"] == "misconfigured"]
    assert f["cause"] == "socket_fallback" and "sockets" in f["message"]
    assert f["cause_line"] == f"{NCCL_DEBUG_DIR}/gpu01.16902.log:2: {real[1].strip()}"
    assert v["imported"] == []  # the rank's NCCL file is stoker's own, never a foreign log
