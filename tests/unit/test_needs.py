"""A workload's needs are promises too (reports/judging/workload/needs.py).

The scenario: `stoker report --workload llama-70b` on one CPU node with no spec passed, though
the job needs an inter-node network across 64 nodes nobody measured, and its step time came from
the CPU's matmul. Records are synthetic (recordgen, and compute records hand-written in the format
stoker compute writes: reports/ingest and netbench's compute records, `kind: "compute"`), the
results directory and `stoker report`'s build real.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from reports.judging.workload.workload import Workload, load_workload, parse_workload
from reports.pipeline import build
from reports.shared.records import write_all
from reports.table.read import RecordSet
from tests.unit.recordgen import io, judge_records, net

CPU_RECORD: dict[str, Any] = {
    "schema": 1,
    "kind": "compute",
    "run_id": "r1",
    "host": "n1",
    "device": "cpu",
    "gpu": None,
    "proc": 0,
    "uuid": None,
    "name": "cpu",
    "dtype": "bf16",
    "best_shape": "1024x1024x1024",
    "median_tflops": 0.05,
    "mean_tflops": 0.05,
    "max_tflops": 0.06,
    "timer": "perf_counter",
}
H100_RECORD = {
    **CPU_RECORD,
    "device": "cuda:0",
    "gpu": 0,
    "name": "NVIDIA H100 80GB HBM3",
    "median_tflops": 650.0,
}


def _cpu_node(tmp: Path, compute: list[dict[str, Any]] | None = None) -> Path:
    """One CPU node: a 2-rank gloo sweep, storage in a scratch dir, a CPU matmul record."""
    d = tmp / "run"
    d.mkdir()
    write_all(
        d / "net.jsonl",
        [
            net("world", op, 2**k, 0.9, ("n1",), ranks=2, backend="gloo")
            for op in ("all_reduce", "all_gather", "reduce_scatter")
            for k in range(20, 27)
        ],
    )
    scratch = str(d / ".io-scratch-abcd")
    write_all(
        d / "io.jsonl",
        [
            io("checkpoint_write", "write", scratch, 1.0, scope="local", per_host={"n1": 1.0}, runtime_s=3),
            io("dataloader_read", "read", scratch, 2.0, scope="local", per_host={"n1": 2.0}, runtime_s=3),
        ],
    )
    rows = [CPU_RECORD] if compute is None else compute
    (d / "compute.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return d


def test_llama_70b_on_one_cpu_node_is_not_a_pass(tmp_path: Path) -> None:
    out = build(_cpu_node(tmp_path), workload_arg="llama-70b")
    v = out.verdict
    assert v["verdict"] == "incomplete", v["headline"]
    unmeasured = {u["what"]: u for u in v["unmeasured"]}
    # by hand: 512 GPUs, tensor 8 inside a node of 8 (the default without a spec): 64 FSDP ranks, 64 nodes
    inter = (
        "workload llama-70b: inter-node network (FSDP data parallel over 64 ranks; 512 GPUs on 64 nodes of 8)"
    )
    acc = "workload llama-70b: compute time per step on GPUs (model not named)"
    assert set(unmeasured) == {inter, acc}, list(unmeasured)
    assert "the run had 1 node" in unmeasured[inter]["why"]
    assert "stoker submit --nodes 2" in unmeasured[inter]["how"]
    assert "measured on cpu, not on GPUs" in unmeasured[acc]["why"]
    # the intra-node need (tensor parallel over 8 GPUs) and the storage were measured
    measured = [c["what"] for c in v["coverage"] if c["status"] == "measured"]
    assert (
        "workload llama-70b: intra-node network (tensor parallel over 8 GPUs; 512 GPUs on 64 nodes of 8)"
        in (measured)
    )
    assert (
        "workload llama-70b: dataloader read on the storage it uses (shared if measured, else any)"
        in measured
    )
    # the CPU's matmul never stands for a GPU's: the model has no compute figure from it
    j = judge_records(RecordSet(compute=[CPU_RECORD]), None, load_workload("llama-70b"))
    assert j.model_summary.get("compute_figure") is None and "give accelerator" in j.model_summary["why"]
    head = "\n".join(out.markdown.splitlines()[:12])
    assert "INCOMPLETE" in head and "inter-node network" in head and "compute time per step on GPUs" in head


def test_a_gpu_matmul_measured_on_the_workloads_accelerator_counts(tmp_path: Path) -> None:
    d = _cpu_node(tmp_path, [H100_RECORD])
    (d / "spec.yaml").write_text("name: h\naccelerator: H100-SXM\ngpus_per_node: 8\n")
    v = build(d, workload_arg="llama-70b").verdict
    acc = [c for c in v["coverage"] if "compute time per step" in c["what"]]
    assert [(c["what"], c["status"]) for c in acc] == [
        ("workload llama-70b: compute time per step on h100-sxm (bf16 matmul measured there)", "measured")
    ]
    # an A100's figure does not stand for the H100 the spec names
    a100 = {**H100_RECORD, "name": "NVIDIA A100-SXM4-80GB"}
    j = judge_records(RecordSet(compute=[a100]), None, load_workload("llama-70b"))
    assert j.model_summary.get("compute_figure") == "measured"  # no accelerator named: any GPU
    w = parse_workload({"preset": "llama-70b", "accelerator": "h100-sxm"}, "w.yaml")
    j = judge_records(RecordSet(compute=[a100]), None, w)
    assert j.model_summary.get("compute_figure") is None
    assert any("compute time per step on h100-sxm" in m and "NVIDIA A100" in m for m in j.missing), j.missing


def test_a_cpu_workload_takes_the_cpu_matmul() -> None:
    w = Workload(name="bed", params=1e6, gpus=2, gpus_per_node=1, data="ddp", global_batch_tokens=100.0)
    assert judge_records(RecordSet(compute=[CPU_RECORD]), None, w).model_summary.get("compute_figure") is None
    cpu = parse_workload(
        {"params": 1e6, "gpus": 2, "global_batch_tokens": 100, "accelerator": "CPU"}, "w.yaml"
    )
    assert cpu.accelerator == "cpu"
    j = judge_records(RecordSet(compute=[CPU_RECORD]), None, cpu)
    assert j.model_summary["compute_figure"] == "measured"
    # by hand: 6 x 1e6 x 100 / (2 GPUs x 0.05e12 x 0.5)
    assert abs(j.model_summary["compute_s"] - 6 * 1e6 * 100 / (2 * 0.05e12 * 0.5)) < 1e-12


def test_storage_paths_the_workload_names_are_needs(tmp_path: Path) -> None:
    d = _cpu_node(tmp_path, [H100_RECORD])
    (d / "w.yaml").write_text(
        "preset: llama-70b\ngpus: 8\ncompute_s: 2.0\n"
        "dataloader: {preset: llm-text, path: /datasets}\ncheckpoint: {path: /ckpt, format: dcp}\n"
    )
    v = build(d, workload_arg=str(d / "w.yaml")).verdict
    assert [(u["what"], u["why"]) for u in v["unmeasured"]] == [
        ("workload llama-70b: dataloader read on /datasets", "no dataloader_read record on /datasets"),
        ("workload llama-70b: checkpoint write (dcp) on /ckpt", "no checkpoint_write record on /ckpt"),
    ]
    assert v["verdict"] != "pass"
    # 8 GPUs on one node: no inter-node need; compute_s given: the compute need is the user's figure
    assert not any("inter-node" in c["what"] for c in v["coverage"])
    assert {
        "what": "workload llama-70b: compute time per step on GPUs (model not named) (compute_s given in the "
        "workload)",
        "status": "measured",
        "why": "",
        "how": "",
    } in v["coverage"]


def test_node_scope_leaves_the_inter_node_need_out_of_scope(tmp_path: Path) -> None:
    d = _cpu_node(tmp_path, [H100_RECORD])
    v = build(d, workload_arg="llama-70b", scope="node").verdict
    assert [n["what"] for n in v["not_covered"]] == [
        "workload llama-70b: inter-node network (FSDP data parallel over 64 ranks; 512 GPUs on 64 nodes of 8)"
    ]
    assert v["unmeasured"] == [] and v["verdict"] != "incomplete", v["headline"]
