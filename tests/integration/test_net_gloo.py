"""Real gloo ranks under torchrun and `--nproc`: every op at several sizes; each record
checked against the nccl-tests formulas with factors worked out by hand here (not taken
from netbench's table)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

import pytest

from tests.conftest import PYTHON, STOKER

pytest.importorskip("torch")

OPS = (
    "all_reduce",
    "all_gather",
    "reduce_scatter",
    "broadcast",
    "reduce",
    "alltoall",
    "sendrecv",
    "gather",  # the three nccl-tests builds beside the seven (src/gather.cu, scatter.cu, alltoallv.cu)
    "scatter",
    "alltoallv",
)
# hypercube (src/hypercube.cu) runs on a power-of-two world only: 2 and 4 ranks, never 3
POWER_OF_TWO_OPS = (*OPS, "hypercube")
# busbw / algbw by hand (nccl-tests doc/PERFORMANCE.md) for 2, 3 and 4 ranks
HAND_FACTOR = {
    2: {
        "all_reduce": 1.0,
        "all_gather": 0.5,
        "reduce_scatter": 0.5,
        "alltoall": 0.5,
        "broadcast": 1.0,
        "reduce": 1.0,
        "sendrecv": 1.0,
        "gather": 0.5,
        "scatter": 0.5,
        "alltoallv": 0.5,
        "hypercube": 1.0,
    },
    3: {
        "all_reduce": 4 / 3,
        "all_gather": 2 / 3,
        "reduce_scatter": 2 / 3,
        "alltoall": 2 / 3,
        "broadcast": 1.0,
        "reduce": 1.0,
        "sendrecv": 1.0,
        "gather": 2 / 3,
        "scatter": 2 / 3,
        "alltoallv": 2 / 3,
    },
    4: {
        "all_reduce": 1.5,
        "all_gather": 0.75,
        "reduce_scatter": 0.75,
        "alltoall": 0.75,
        "broadcast": 1.0,
        "reduce": 1.0,
        "sendrecv": 1.0,
        "gather": 0.75,
        "scatter": 0.75,
        "alltoallv": 0.75,
        "hypercube": 1.0,
    },
}
SWEEP = ["-b", "8", "-e", "128K", "-f", "16", "-n", "5"]  # 8, 128, 2K, 32K bytes


def _port(base: int) -> str:
    """A free port in this area's range (29700..29799), so parallel suites do not collide."""
    for p in range(base, 29800):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", p))
                return str(p)
            except OSError:
                continue
    raise RuntimeError("no free port in 29700..29799")


def _records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "net.jsonl").read_text().splitlines()]


def _net(
    out: Path, *argv: str, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], list[dict]]:
    """`stoker net ARGV --out OUT`, which must succeed; returns the run and its records."""
    proc = subprocess.run(
        [*STOKER, "net", *argv, "--out", str(out)], capture_output=True, text=True, timeout=180, env=env
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc, _records(out)


# hypercube's algbw is what one rank receives per second: (n-1)/n of the size (HyperCubeGetBw)
HYPERCUBE_ALGBW_SHARE = {2: 1 / 2, 4: 3 / 4}


def _check_formulas(rec: dict) -> None:
    n = rec["ranks"]
    assert rec["wrong"] == 0, rec
    share = HYPERCUBE_ALGBW_SHARE[n] if rec["op"] == "hypercube" else 1.0
    assert rec["algbw_GBps"] == pytest.approx(share * rec["bytes"] / rec["time_s"] / 1e9, rel=1e-9)
    assert rec["busbw_GBps"] == pytest.approx(rec["algbw_GBps"] * HAND_FACTOR[n][rec["op"]], rel=1e-9)
    assert rec["time_min_s"] <= rec["time_p50_s"] <= rec["time_p99_s"]


def _torchrun(nproc: int, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    cmd = [
        PYTHON,
        "-m",
        "torch.distributed.run",
        "--nproc-per-node",
        str(nproc),
        "--master-port",
        _port(29700),
        "-m",
        "launchers.cli",
        "net",
        *SWEEP,
        "--scopes",
        "world",
        "--out",
        str(out),
        *extra,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=240)


@pytest.mark.parametrize("nproc", [2, 3])
def test_torchrun_every_op(tmp_path: Path, nproc: int) -> None:
    out = tmp_path / "nb-out"
    proc = _torchrun(nproc, out, "--in-place")
    assert proc.returncode == 0, proc.stderr[-2000:]
    recs = _records(out)
    assert {r["op"] for r in recs} == set(POWER_OF_TWO_OPS if nproc == 2 else OPS)
    host = socket.gethostname()
    for rec in recs:
        _check_formulas(rec)
        assert (rec["scope"], rec["ranks"], rec["hosts"], rec["nodes"], rec["backend"]) == (
            "world",
            nproc,
            [host],
            1,
            "gloo",
        )
    # by hand, as nccl-tests: each rank's chunk is count/n rounded down to 16 B (4 floats).
    # 8 B = 2 floats: 1 or 0 per rank -> 0: no record; at 3 ranks 128 B = 32 floats -> 10 per
    # rank -> 8 -> 24 elements = 96 B, 2048 B -> 170 -> 168 -> 2016 B, 32768 B -> 2728 -> 32736 B
    ag = sorted(r["bytes"] for r in recs if r["op"] == "all_gather" and not r["in_place"])
    assert ag == ([128, 2048, 32768] if nproc == 2 else [96, 2016, 32736])
    gathered = sorted(r["bytes"] for r in recs if r["op"] == "gather")
    assert gathered == ag  # the root's whole output, as all_gather's
    # alltoallv by hand (nccl-tests alltoallv.cu, spread 1.0): at 3 ranks and 128 B, 32 floats
    # -> paramcount (32 / 3) & ~3 = 8 -> 96 B in all; rank 0 sends rank 1 1 x 96 / 3 = 32 B and
    # rank 2 64 B: the size column is 96 B; 2 KiB -> 168 per peer -> 2016 B; 32 KiB -> 32736 B.
    # 8 B: paramcount 0, no record. At 2 ranks rank 0 sends all of it to rank 1.
    a2av = sorted(r["bytes"] for r in recs if r["op"] == "alltoallv")
    assert a2av == ([128, 2048, 32768] if nproc == 2 else [96, 2016, 32736])
    assert any(r["in_place"] for r in recs if r["op"] == "all_gather")
    assert len({r["run_id"] for r in recs}) == 1
    assert "# op all_reduce" in proc.stdout and "busbw" in proc.stdout


def test_torchrun_with_one_rank_joins_the_agents_store(tmp_path: Path) -> None:
    # torchrun's agent hosts the store at MASTER_ADDR/PORT and its ranks only connect to it:
    # a lone rank that made its own store on another port used to wait there for ever
    out = tmp_path / "nb-one"
    proc = _torchrun(1, out, "--ops", "all_reduce,broadcast")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert {(r["op"], r["ranks"]) for r in _records(out)} == {("all_reduce", 1), ("broadcast", 1)}


def test_nproc_standalone_table_records_manifest(tmp_path: Path) -> None:
    out = tmp_path / "nb-standalone"
    proc, recs = _net(
        out,
        "--nproc",
        "2",
        "--ops",
        "all_reduce,sendrecv",
        *SWEEP,
        env={**os.environ, "NCCL_DEBUG": "WARN", "MY_SECRET": "x"},
    )
    assert len(recs) == 8 and all(r["scope"] == "intra-node" for r in recs)  # one host: world = intra-node
    for rec in recs:
        _check_formulas(rec)
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("# stoker net: scope intra-node, group 0, 2 ranks on host")
    assert lines[-1].endswith(f"{out}/net.jsonl (GB/s = 1e9 B/s; busbw per nccl-tests PERFORMANCE.md)")
    rows = [ln.split() for ln in lines if ln and not ln.startswith("#")]
    assert [r[:5] for r in rows[:2]] == [
        ["8", "2", "float32", "sum", "-1"],
        ["128", "32", "float32", "sum", "-1"],
    ]
    manifest = [json.loads(x) for x in (out / "manifest.jsonl").read_text().splitlines()]
    assert len(manifest) == 1
    m = manifest[0]
    assert m["versions"]["torch"].startswith("2.") and m["settings"]["iters"] == 5
    assert m["env"].get("NCCL_DEBUG") == "WARN" and "MY_SECRET" not in m["env"] and "PATH" not in m["env"]


def test_scopes_on_two_fake_nodes(tmp_path: Path) -> None:
    out = tmp_path / "nb-scopes"
    _, recs = _net(
        out,
        "--nproc",
        "4",
        "--hosts-override",
        "h0,h0,h1,h1",
        "--ops",
        "all_reduce",
        "-b",
        "4K",
        "-e",
        "4K",
        "-n",
        "3",
        "--scopes",
        "world,intra-node,inter-node,pairs",
    )
    got = sorted(
        (r["scope"], r["group"], r["ranks"], tuple(r["hosts"])) for r in recs if r.get("pass", 1) == 1
    )
    assert got == [
        ("inter-node", 0, 2, ("h0", "h1")),
        ("inter-node", 1, 2, ("h0", "h1")),
        ("intra-node", 0, 2, ("h0",)),
        ("intra-node", 1, 2, ("h1",)),
        ("pair", 0, 2, ("h0", "h1")),  # rail 0: local rank 0 of each node
        ("pair", 1, 2, ("h0", "h1")),  # rail 1, in the same round
        ("world", 0, 4, ("h0", "h1")),
    ]
    assert sorted((r["group"], r["rail"], r["round"]) for r in recs if r["scope"] == "pair") == [
        (0, 0, 0),
        (1, 1, 0),
    ]
    for rec in recs:
        _check_formulas(rec)
    assert len((out / "manifest.jsonl").read_text().splitlines()) == 2  # one per (fake) host


def test_pairs_on_four_fake_nodes(tmp_path: Path) -> None:
    out = tmp_path / "nb-pairs"
    _, recs = _net(
        out,
        "--nproc",
        "4",
        "--hosts-override",
        "a,b,c,d",
        "--scopes",
        "pairs",
        "--ops",
        "all_reduce",
        "--pair-bytes",
        "64K",
        "-n",
        "3",
    )
    every = [("a", "b"), ("a", "c"), ("a", "d"), ("b", "c"), ("b", "d"), ("c", "d")]
    first = [r for r in recs if r["pass"] == 1]
    assert sorted(tuple(sorted(r["hosts"])) for r in first) == every  # each pair exactly once
    assert sorted(r["round"] for r in first) == [0, 0, 1, 1, 2, 2]
    # pass 2 re-measures pairs that reports.judging.network.localise finds suspect; timings on one shared
    # machine may or may not make any pair look slow, so only its shape is checked
    second = [r for r in recs if r["pass"] != 1]
    assert all(r["pass"] == 2 and tuple(sorted(r["hosts"])) in every for r in second)
    assert {r["scope"] for r in recs} == {"pair"}
    assert all(r["bytes"] == 65536 and r["op"] == "all_reduce" and r["wrong"] == 0 for r in recs)


def test_explicit_pairs_only(tmp_path: Path) -> None:
    out = tmp_path / "nb-explicit"
    # z:x names rank 2 first; all_gather's chunk order shows whether group ranks agree with torch's
    _, recs = _net(
        out,
        "--nproc",
        "3",
        "--hosts-override",
        "x,y,z",
        "--pairs",
        "z:x",
        "--pair-op",
        "all_gather",
        "--pair-bytes",
        "8K",
        "-n",
        "3",
    )
    assert [(r["scope"], r["hosts"], r["ranks"], r["bytes"], r["pass"], r["wrong"]) for r in recs] == [
        ("pair", ["x", "z"], 2, 8192, 1, 0)
    ]
