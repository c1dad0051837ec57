import json
from pathlib import Path

from reports.shared.manifest import allowlisted_env
from reports.shared.records import IoRecord, NetRecord, RecordWriter, to_dict
from reports.table.read import read_records


def _net(**kw: object) -> NetRecord:
    base = dict(
        run_id="r",
        ts="2026-01-01T00:00:00Z",
        hosts=("a", "b"),
        nodes=2,
        op="all_reduce",
        scope="world",
        ranks=2,
        backend="gloo",
        dtype="float32",
        bytes=1024,
        time_s=1e-3,
        algbw_GBps=1.024e-3,
        busbw_GBps=1.024e-3,
        wrong=0,
    )
    base.update(kw)
    return NetRecord(**base)  # type: ignore[arg-type]


def test_roundtrip_and_garbage_is_skipped(tmp_path: Path) -> None:
    with RecordWriter(tmp_path / "net.jsonl") as w:
        w.write(_net())
        w.write({**to_dict(_net(bytes=2048)), "future_field": 7})
    with open(tmp_path / "net.jsonl", "a") as fh:
        fh.write('{"schema": 1, "kind": "net", "op": "all_re\n')  # truncated line
        fh.write("[1, 2]\n")
        fh.write(json.dumps({"schema": 1, "kind": "net"}) + "\n")  # missing fields
    rs = read_records(tmp_path)
    assert [r.bytes for r in rs.net.records()] == [1024, 2048]
    assert rs.net.records()[1].extra == {"future_field": 7}
    assert rs.net.records()[0].hosts == ("a", "b")
    assert len(rs.skipped) == 3
    assert to_dict(rs.net.records()[1])["future_field"] == 7


def test_io_record_roundtrip(tmp_path: Path) -> None:
    rec = IoRecord(
        run_id="r",
        ts="t",
        hosts=("a",),
        nodes=1,
        workload="checkpoint_write",
        direction="write",
        path="/x",
        scope="local",
        procs=2,
        bytes=10,
        bw_GBps=1.0,
        per_host_bw_GBps={"a": 1.0},
        iops=3.0,
        lat_ms={"p50": 1.0, "p99": 2.0},
    )
    with RecordWriter(tmp_path / "io.jsonl") as w:
        w.write(rec)
    assert read_records(tmp_path).io == [rec]


def test_env_allowlist_drops_secrets() -> None:
    env = {
        "NCCL_DEBUG": "INFO",
        "AWS_SECRET_ACCESS_KEY": "x",
        "HF_TOKEN": "y",
        "PATH": "/bin",
        "NCCL_IB_HCA": "mlx5",
        "TORCH_HUB_TOKEN": "z",
        "UCX_TLS": "rc",
    }
    assert allowlisted_env(env) == {
        "NCCL_DEBUG": "INFO",
        "NCCL_IB_HCA": "mlx5",
        "TORCH_HUB_TOKEN": "<redacted>",
        "UCX_TLS": "rc",
    }
