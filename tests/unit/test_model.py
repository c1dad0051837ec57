"""The starvation model against cases computed by hand (the arithmetic is in the comments).

All cases use a made-up accelerator of exactly 1,000 dense bf16 TFLOPS, 8 GPUs per node,
MFU 0.5, and flat busbw curves (the same at every size), so that each figure below can
be checked with a pocket calculator.
"""

from __future__ import annotations

import dataclasses

import pytest

from reports.judging.workload.model import Measured, starvation
from reports.judging.workload.workload import Checkpoint, Dataloader, Workload, load_workload
from reports.shared.catalog import Accelerator
from reports.shared.spec import Spec
from tests.unit.recordgen import curves as build_curves
from tests.unit.recordgen import flat

ACC = Accelerator(
    name="test-1000",
    tflops={"bf16": 1000.0},
    hbm_GB=80,
    hbm_TBps=3,
    intra_link="nvlink4",
    host_link="pcie5-x16",
    gpus_per_node=8,
)
SPEC = Spec(accelerator=ACC, gpus_per_node=8, price_per_gpu_hour=2.0)
A, B = ("n1",), ("n1", "n2")


def measured(*curves: list, read: float | None = None, write: float | None = None) -> Measured:
    recs = [r for c in curves for r in c]
    return Measured(curves=build_curves(recs)[0], read_GBps_per_node=read, write_GBps=write)


DDP = Workload(
    params=1e9, gpus=16, data="ddp", tensor=1, global_batch_tokens=1.6e6, mfu=0.5, idle_budget=0.05
)


def test_ddp_hidden_behind_the_backward_pass() -> None:
    rows, s = starvation(DDP, SPEC, measured(flat("inter-node", "all_reduce", 10.0, B)))
    # compute C = 6 x 1e9 x 1.6e6 / (16 x 1000e12 x 0.5) = 9.6e15 / 8e15 = 1.2 s
    assert s["compute_s"] == pytest.approx(1.2)
    (row,) = rows
    # D = 16 ranks > 8 per node -> inter-node. Gradients 1e9 x 2 B = 2e9 B; bus bytes = 2e9 x 2 x 15/16 = 3.75e9
    # time at 10 GB/s = 0.375 s; window = overlap 1.0 x backward 2/3 x 1.2 = 0.8 s
    assert row.component == "inter-node network" and row.check == "DDP gradient all_reduce (16 ranks)"
    assert row.extra["comm_s"] == pytest.approx(0.375)
    assert row.extra["window_s"] == pytest.approx(0.8)
    assert row.extra["message_bytes"] == 25 * 2**20  # DDP's 25 MiB buckets
    # buckets: 1 MiB first, 76 x 25 MiB, and the first layers' remainder 2e9 - 1,993,342,976 = 6,657,024 B
    assert row.extra["buckets"] == 78 and row.extra["last_bucket_bytes"] == 6_657_024
    # the last full bucket is ready at 0.8 x (1 - 6657024 / 2e9) = 0.797337 s and takes
    # 26214400 x 1.875 / 10e9 = 4.9152 ms, ending at 0.802252 s; the remainder then takes 1.2482 ms:
    # exposed = 0.8035006 - 0.8 = 3.5006 ms (the last bucket cannot hide)
    assert row.extra["exposed_s"] == pytest.approx(0.0035006, rel=1e-4)
    # share = 0.0035006 / 1.2035006 = 0.0029087, within 5%
    assert row.idle_share == pytest.approx(0.0029087, rel=1e-4) and row.status == "ok"
    # required busbw: the budget allows E = 0.05 / 0.95 x 1.2 = 0.063158 s exposed;
    # 3.75e9 B / (0.8 + 0.063158) s = 4.3445 GB/s
    assert row.required == pytest.approx(4.3445, rel=1e-4)
    assert row.achieved == pytest.approx(10.0)
    assert s["step_s"] == pytest.approx(1.2035006, rel=1e-6)


def test_ddp_starving_and_the_cost() -> None:
    rows, s = starvation(DDP, SPEC, measured(flat("inter-node", "all_reduce", 2.0, B)))
    (row,) = rows
    # at 2 GB/s a 25 MiB bucket takes 24.576 ms but is filled every 10.486 ms: the all-reduces
    # run back to back from the second bucket's ready time, 0.8 x 27262976 / 2e9 = 0.0109052 s.
    # end = 0.0109052 + 1.875 (all) - 0.000983 (the 1 MiB bucket, done before) = 1.8849222 s
    # exposed = 1.8849222 - 0.8 = 1.0849222 s; share = 1.0849222 / 2.2849222 = 0.474818
    assert row.extra["exposed_s"] == pytest.approx(1.0849222, rel=1e-6)
    assert row.idle_share == pytest.approx(0.474818, rel=1e-5)
    assert row.status == "starving"
    # $ per day = share x 16 GPUs x $2 x 24 h = 0.474818 x 768 = 364.66
    assert row.usd_per_day == pytest.approx(364.66, rel=1e-4)
    assert s["step_s"] == pytest.approx(2.2849222, rel=1e-6)
    assert s["usd_per_day_lost"] == pytest.approx(364.66, rel=1e-4)


def test_ddp_one_bucket_is_never_hidden() -> None:
    """The 2 x 200 Mbit/s bed: 6.3 M fp32 parameters = 25.2 MB, one 25 MiB bucket
    plus a small one; a compute-heavy step hid almost none of it."""
    w = Workload(params=6.3e6, gpus=2, gpus_per_node=1, data="ddp", grad_bytes=4.0, compute_s=1.38)
    rows, s = starvation(w, None, measured(flat("inter-node", "all_reduce", 0.025, B)))
    (row,) = rows
    # buckets: 1 MiB, then the remaining 24,151,424 B in one (< 25 MiB)
    assert row.extra["buckets"] == 2 and row.extra["last_bucket_bytes"] == 24_151_424
    # the big bucket is ready at the end of the backward (2/3 x 1.38 = 0.92 s) and takes
    # 24151424 x 2 x 1/2 / 0.025e9 = 0.966057 s, all exposed; share = 0.966057 / 2.346057 = 0.411779
    assert s["compute_s"] == 1.38 and s["compute_from"] == "compute_s (measured)"
    assert row.extra["exposed_s"] == pytest.approx(0.966057, rel=1e-5)
    assert row.idle_share == pytest.approx(0.411779, rel=1e-5)


def test_tensor_parallel_beyond_a_node_crosses_nodes() -> None:
    w = dataclasses.replace(FSDP_TP, gpus=64, tensor=16)
    m = measured(flat("intra-node", "all_reduce", 100.0), flat("inter-node", "all_reduce", 20.0, B))
    tp = starvation(w, SPEC, m)[0][0]
    # 16 GPUs of tensor parallelism on 8-GPU nodes: the group spans 2 nodes, judged on the inter-node sweep
    assert tp.component == "inter-node network" and tp.check == "tensor parallel all_reduce (16 GPUs)"
    assert tp.achieved == pytest.approx(20.0)


# tp_overlap 0: tensor-parallel collectives on the critical path (Megatron without --tp-comm-overlap)
FSDP_TP = Workload(
    params=6.4e9,
    layers=32,
    hidden=4096,
    seq_len=4096,
    gpus=64,
    data="fsdp",
    tensor=2,
    global_batch_tokens=1048576,
    mfu=0.5,
    idle_budget=0.05,
    tp_overlap=0.0,
)


def test_fsdp_with_tensor_parallel() -> None:
    m = measured(
        flat("intra-node", "all_reduce", 100.0),
        flat("inter-node", "all_gather", 20.0, B),
        flat("inter-node", "reduce_scatter", 25.0, B),
    )
    rows, s = starvation(FSDP_TP, SPEC, m)
    tp, dp = rows
    # C = 6 x 6.4e9 x 1048576 / (64 x 1000e12 x 0.5) = 4.0265e16 / 3.2e16 = 1.2582912 s
    c = 1.2582912
    assert s["compute_s"] == pytest.approx(c)
    # TP: D = 64 / 2 = 32 replicas; each sees 1048576 / 32 = 32768 tokens = 8 sequences of 4096.
    # 4 all-reduces per layer per sequence: 4 x 32 x 8 = 1024 of 4096 x 4096 x 2 B = 33,554,432 B
    assert tp.extra["message_bytes"] == 33554432 and tp.extra["per_step"] == 1024
    # bus bytes = 1024 x 33554432 x 2 x (2-1)/2 = 3.43597e10 B; at 100 GB/s = 0.343597 s, never hidden
    assert tp.extra["exposed_s"] == pytest.approx(0.3435974, rel=1e-6)
    # share = 0.343597 / (1.258291 + 0.343597) = 0.214495 -> starving against 5%
    assert tp.idle_share == pytest.approx(0.214495, rel=1e-5)
    assert tp.status == "starving" and tp.component == "intra-node network"
    # FSDP: 32 DP ranks, 8 / 2 = 4 per node -> inter-node. Unit = a layer: 6.4e9 / 2 / 32 x 2 B = 2e8 B
    # all_gather: 2 x 32 x 2e8 x 31/32 = 1.24e10 B at 20 GB/s = 0.62 s
    # reduce_scatter: 32 x 2e8 x 31/32 = 6.2e9 B at 25 GB/s = 0.248 s; total 0.868 s < window C -> hidden
    assert dp.extra["message_bytes"] == 2e8
    assert dp.extra["comm_s"] == pytest.approx(0.868)
    assert (dp.idle_share, dp.status) == (0.0, "ok")
    # effective busbw = 1.86e10 B / 0.868 s = 21.429 GB/s; required = 1.86e10 / (1.258291 + 0.066226) = 14.043 GB/s
    assert dp.achieved == pytest.approx(21.4286, rel=1e-4)
    assert dp.required == pytest.approx(14.0428, rel=1e-4)
    # step = 1.258291 + 0.343597 = 1.601888 s; total idle share = 0.343597 / 1.601888 = 0.214495
    assert s["step_s"] == pytest.approx(1.601888, rel=1e-6)
    assert s["idle_share"] == pytest.approx(0.214495, rel=1e-5)


def test_tensor_parallel_overlap_hides_part_of_it() -> None:
    m = measured(flat("intra-node", "all_reduce", 100.0), flat("inter-node", "all_reduce", 20.0, B))
    rows, _ = starvation(dataclasses.replace(FSDP_TP, tp_overlap=0.25), SPEC, m)
    tp = rows[0]
    # window = 0.25 x 1.2582912 = 0.3145728 s; exposed = 0.3435974 - 0.3145728 = 0.0290246 s
    assert tp.extra["exposed_s"] == pytest.approx(0.0290246, rel=1e-5)
    # share = 0.0290246 / (1.2582912 + 0.0290246) = 0.022547 -> within 5%
    assert tp.idle_share == pytest.approx(0.022547, rel=1e-4) and tp.status == "ok"


def test_fsdp_falls_back_to_all_reduce_busbw_and_says_so() -> None:
    rows, _ = starvation(
        dataclasses.replace(FSDP_TP, tensor=1), SPEC, measured(flat("inter-node", "all_reduce", 20.0, B))
    )
    (dp,) = rows
    assert "no inter-node all_gather sweep: the all_reduce busbw was used" in dp.extra["note"]


def test_missing_sweep_is_no_reference() -> None:
    rows, _ = starvation(DDP, SPEC, measured(flat("intra-node", "all_reduce", 100.0)))
    assert [(r.status, r.achieved) for r in rows] == [("no_reference", None)]


def test_no_accelerator_no_model() -> None:
    rows, s = starvation(DDP, Spec(), measured(flat("inter-node", "all_reduce", 10.0, B)))
    assert rows == [] and "give accelerator in --spec" in s["why"]


def test_unet3d_dataloader() -> None:
    w = load_workload("unet3d")
    rows, s = starvation(w, SPEC, measured(read=12.7))
    (row,) = rows
    # samples/s per GPU = batch 7 / 0.323 s (H100 figure) = 21.672; demand per node
    # = 21.672 x 146.6e6 B x 8 GPUs = 25.417 GB/s
    assert row.required == pytest.approx(25.4168, rel=1e-4)
    # the GPUs wait for what storage cannot deliver: share = 1 - 12.7 / 25.417 = 0.50033
    assert row.idle_share == pytest.approx(0.50033, rel=1e-4)
    assert row.status == "starving"
    # the test accelerator is neither an A100 nor an H100: the H100 figure is used and the note says so
    assert "H100 used" in row.extra["note"]
    # 8 GPUs (one node) x $2 x 24 = $384 a day x 0.50033 = $192.13
    assert row.usd_per_day == pytest.approx(192.13, rel=1e-4)


def test_llm_text_dataloader_follows_the_token_rate() -> None:
    w = dataclasses.replace(DDP, dataloader=Dataloader(name="llm-text", bytes_per_token=4.0))
    rows, _ = starvation(w, SPEC, measured(flat("inter-node", "all_reduce", 10.0, B), read=1.0))
    dl = rows[-1]
    # step 1.2 s (nothing exposed); per node 1.6e6 / 16 x 8 = 800,000 tokens x 4 B / 1.2 s = 2.6667 MB/s
    assert dl.required == pytest.approx(0.0026667, rel=1e-4)
    assert dl.status == "ok" and dl.idle_share == 0.0


def test_checkpoint_sync_and_async() -> None:
    sync = dataclasses.replace(DDP, checkpoint=Checkpoint(interval_minutes=60, bytes_per_param=14))
    rows, s = starvation(sync, SPEC, measured(flat("inter-node", "all_reduce", 10.0, B), write=7.0))
    ck = rows[-1]
    # 1e9 params x 14 B = 14e9 B at 7 GB/s = 2 s every 3600 s: share = 2 / 3602 = 5.5525e-4
    assert ck.extra["write_s"] == pytest.approx(2.0)
    assert ck.idle_share == pytest.approx(5.5525e-4, rel=1e-4)
    # required so the stall stays within 5%: 14e9 / (0.05 / 0.95 x 3600 s) = 0.073889 GB/s
    assert ck.required == pytest.approx(0.073889, rel=1e-4)
    assert ck.status == "ok"
    # with the DDP step's 0.0029087 (see above): 1 - (1 - 0.0029087) x (1 - 5.5525e-4) = 0.0034623
    assert s["idle_share"] == pytest.approx(0.0034623, rel=1e-4)
    asyn = dataclasses.replace(
        DDP, checkpoint=Checkpoint(interval_minutes=60, bytes_per_param=14, async_=True)
    )
    rows, _ = starvation(asyn, SPEC, measured(flat("inter-node", "all_reduce", 10.0, B), write=7.0))
    ck = rows[-1]
    # async: only the copy-out, 14e9 / 16 GPUs = 8.75e8 B per GPU over PCIe 5 (63 GB/s) = 0.013889 s
    assert ck.extra["exposed_s"] == pytest.approx(0.0138889, rel=1e-5)
    # a write slower than the interval makes the next checkpoint wait: 14e9 at 0.003 GB/s = 4666.7 s > 3600
    rows, _ = starvation(asyn, SPEC, measured(flat("inter-node", "all_reduce", 10.0, B), write=0.003))
    assert rows[-1].extra["exposed_s"] == pytest.approx(0.0138889 + 4666.667 - 3600, rel=1e-5)
    assert rows[-1].status == "starving"


def test_total_idle_share_combines_step_and_checkpoint() -> None:
    w = dataclasses.replace(DDP, checkpoint=Checkpoint(interval_minutes=60, bytes_per_param=14))
    _, s = starvation(w, SPEC, measured(flat("inter-node", "all_reduce", 2.0, B), write=7.0))
    # compute share of wall time = (1 - 0.474818) x (1 - 5.5525e-4); idle = 1 - that = 0.475110
    assert s["idle_share"] == pytest.approx(0.475110, rel=1e-5)


def test_docs_worked_example() -> None:
    """The numbers of docs/model.md's worked example."""
    from reports.shared.spec import load_spec
    from tests.conftest import REPO

    spec = load_spec(REPO / "examples" / "spec-h100.yaml")
    # the docs round the preset's 70.6e9 parameters to 70e9 for the arithmetic
    w = dataclasses.replace(load_workload(REPO / "examples" / "workload-llama70b.yaml"), params=70e9)
    m = measured(
        flat("intra-node", "all_reduce", 360.0),
        flat("inter-node", "all_gather", 34.0, B),
        flat("inter-node", "reduce_scatter", 34.0, B),
        read=15.0,
        write=3.0,
    )
    rows, s = starvation(w, spec, m)
    tp, dp, dl, ck = rows
    assert s["compute_s"] == pytest.approx(8.294, abs=5e-4)
    assert tp.extra["comm_s"] == pytest.approx(1.593, abs=5e-4)
    assert tp.extra["window_s"] == pytest.approx(4.147, abs=5e-4)
    assert (tp.idle_share, tp.status) == (0.0, "ok") and tp.required == pytest.approx(125.1, abs=0.05)
    assert dp.extra["message_bytes"] == 218_750_000
    assert dp.extra["comm_s"] == pytest.approx(1.520, abs=5e-4)
    assert dp.idle_share == 0.0 and dp.required == pytest.approx(5.92, abs=0.005)
    assert dl.required == pytest.approx(3.0e-5, rel=0.01) and dl.status == "ok"
    assert ck.extra["write_s"] == pytest.approx(326.7, abs=0.05)
    assert (round(ck.idle_share, 4), ck.status) == (0.0832, "starving")
    assert ck.required == pytest.approx(5.17, abs=0.005) and ck.usd_per_day == pytest.approx(2545, abs=0.5)
    assert (round(s["idle_share"], 4), round(s["usd_per_day_lost"])) == (0.0832, 2545)
    (dp1, *_rest) = starvation(dataclasses.replace(w, tensor=1), spec, m)[0]
    assert dp1.extra["comm_s"] == pytest.approx(12.33, abs=0.01)
    assert (round(dp1.idle_share, 3), dp1.status) == (0.327, "starving")
    tp0 = starvation(dataclasses.replace(w, tp_overlap=0.0), spec, m)[0][0]
    assert (round(tp0.idle_share, 3), tp0.status) == (0.161, "starving")


def test_dataloader_demand_follows_compute_not_the_starved_step() -> None:
    """A starving network stretches the step but never makes the dataloader look idle."""
    w = dataclasses.replace(DDP, dataloader=Dataloader(name="llm-text", bytes_per_token=4.0))
    rows, _ = starvation(w, SPEC, measured(flat("inter-node", "all_reduce", 0.01, B), read=1.0))
    dl = rows[-1]
    # the network exposes minutes per step, but the demand is 800,000 tokens x 4 B per node per C = 1.2 s
    assert rows[0].extra["exposed_s"] > 300
    assert dl.required == pytest.approx(0.0026667, rel=1e-4)


def test_compute_s_replaces_the_flops_estimate() -> None:
    # no accelerator, no batch: the measured compute time is all the model needs for DDP
    w = Workload(params=1e9, gpus=16, data="ddp", compute_s=2.0)
    rows, s = starvation(w, None, measured(flat("inter-node", "all_reduce", 2.0, B)))
    assert s["compute_s"] == 2.0 and "why" not in s
    # window 2/3 x 2.0 = 1.3333 s; the chain is bucket-bound (24.576 ms per 25 MiB vs 17.476 ms to fill one),
    # so it runs back to back from the second bucket's ready time 1.3333 x 27262976 / 2e9 = 0.0181753 s:
    # end = 0.0181753 + 1.875 - 0.000983 = 1.8921923; exposed = 1.8921923 - 1.3333333 = 0.558859 s
    assert rows[0].extra["exposed_s"] == pytest.approx(0.558859, rel=1e-5)


def test_cpu_ranks_lose_compute_to_overlapped_communication() -> None:
    from reports.judging.workload.model import ddp_time

    curve = build_curves(flat("inter-node", "all_reduce", 0.01, B))[0][("inter-node", "all_reduce")]
    # two 1 MB buckets among 2 ranks at 0.01 GB/s: 0.1 s each; backward window 1.0 s
    # GPU (steal 0): bucket 1 ready at 0.5 s, done at 0.6; bucket 2 ready at 1.0, done at 1.1: 0.1 s exposed
    assert ddp_time(curve, 2, [1e6, 1e6], 1.0)[2] == pytest.approx(0.1)
    # CPU (steal 0.5): bucket 1's 0.1 s overlaps the backward and stretches it by 0.05 s, to 1.05;
    # bucket 2 then runs 1.05..1.15: exposed = 0.05 (stretch) + 0.1 (last bucket) = 0.15 s
    assert ddp_time(curve, 2, [1e6, 1e6], 1.0, steal=0.5)[2] == pytest.approx(0.15)


def test_fsdp_on_cpu_ranks_does_not_overlap() -> None:
    m = measured(flat("inter-node", "all_gather", 20.0, B), flat("inter-node", "reduce_scatter", 25.0, B))
    w = dataclasses.replace(FSDP_TP, tensor=1)
    (gpu,) = starvation(w, SPEC, m)[0]
    (cpu,) = starvation(w, SPEC, dataclasses.replace(m, cpu_ranks=True))[0]
    # GPU: C = 1.2583 s of it hidden (prefetch on CUDA streams); CPU ranks: no streams, all of it is exposed
    assert gpu.extra["window_s"] == pytest.approx(1.2582912)
    assert gpu.extra["exposed_s"] == pytest.approx(gpu.extra["comm_s"] - 1.2582912)
    assert cpu.extra["exposed_s"] == pytest.approx(cpu.extra["comm_s"]) and cpu.extra["window_s"] == 0.0
    assert "CPU ranks" in cpu.extra["note"]
