"""What the cost of the work assumes, said where the buyer signs (pure).

compare.md prices one job on every cluster through the starvation model (docs/model.md). A
price is only as good as what it assumes of the job, so every assumption is a row: the model's
shape, its GPUs and parallelism, the MFU and the peak TFLOPS it is applied to (per cluster: the
accelerators may differ), the overlap windows, the checkpoint's interval and bytes, the
dataloader's demand and the idle budget. Rows are data: (assumption, value, where it comes from).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Assumption = tuple[str, str, str]  # what, value, from


def _src(workload: Any) -> str:
    return f"workload {workload.file}" if getattr(workload, "file", "") else f"workload {workload.name}"


def _peaks(workload: Any, specs: Mapping[str, Any], appetite: Mapping[str, str]) -> str:
    """Per cluster: the compute figure the step time came from."""
    out = []
    for name in sorted(specs):
        spec = specs[name]
        acc = getattr(spec, "accelerator", None)
        peak = acc.tflops.get(workload.dtype) if acc is not None else None
        how = appetite.get(name, "")
        if workload.compute_s is not None:
            out.append(f"{name}: none (compute_s {workload.compute_s:g} s given)")
        elif how.startswith("measured"):
            out.append(f"{name}: measured matmul TFLOPS x matmul_efficiency {workload.matmul_efficiency:g}")
        elif peak is not None and acc is not None:
            out.append(f"{name}: {peak:,.0f} {workload.dtype} TFLOPS ({acc.name}, catalog dense peak)")
        else:
            out.append(f"{name}: none (no accelerator in its spec)")
    return "; ".join(out)


def assumptions(
    workload: Any, specs: Mapping[str, Any], appetite: Mapping[str, str] | None = None
) -> tuple[Assumption, ...]:
    """The assumptions of the cost of `workload` on the clusters of `specs` (name -> spec)."""
    if workload is None:
        return ()
    w, src = workload, _src(workload)
    rows: list[Assumption] = []
    if w.is_training:
        p = w.params or 0.0
        rows += [
            (
                "model",
                f"{p / 1e9:g}B parameters, {w.n_layers} layers, hidden {w.d_model}, sequence {w.seq_len}",
                src,
            ),
            ("GPUs of the job", f"{w.gpus:,}", src),
            (
                "parallelism",
                f"data {w.data.upper()}, tensor {w.tensor} (tensor parallel stays inside a node)",
                src,
            ),
            ("tokens per step", f"{w.global_batch_tokens:,.0f}" if w.global_batch_tokens else "—", src),
            ("MFU", f"{w.mfu:.2f} (step compute = 6 x params x tokens / (GPUs x peak x MFU))", src),
            ("peak used", _peaks(w, specs, appetite or {}), "reports/judging/catalog/accelerators.yaml"),
            (
                "overlap",
                f"data-parallel traffic hides behind {w.overlap:.0%} of compute; tensor-parallel behind "
                f"{w.tp_overlap:.0%}; {w.grad_bytes:g} bytes per gradient element on the wire",
                src,
            ),
        ]
    dl = w.dataloader
    if dl is not None:
        demand = (
            f"{dl.bytes_per_token:g} bytes per token of the step"
            if dl.bytes_per_token
            else f"{dl.bytes_per_sample or 0:,.0f} bytes x {dl.samples_per_s_per_gpu or 0:g} samples/s per GPU"
        )
        rows.append(("dataloader", f"{dl.name}: {demand}, read from {dl.path or 'shared'} storage", src))
    ck = w.checkpoint
    if ck is not None:
        size = (
            f"{(w.params or 0.0) * ck.bytes_per_param / 1e9:,.1f} GB ({ck.bytes_per_param:g} bytes per parameter)"
            if w.params
            else f"{ck.bytes_per_param:g} bytes per parameter"
        )
        rows.append(
            (
                "checkpoint",
                f"every {ck.interval_minutes:g} min, {size}, {'async' if ck.async_ else 'synchronous'} "
                f"({ck.format}), to {ck.path or 'shared'} storage",
                src,
            )
        )
    rows.append(
        (
            "idle budget",
            f"{w.idle_budget:.0%} of step time the GPUs may wait (a component over it is starving)",
            src,
        )
    )
    return tuple(rows)
