"""The starvation model (pure): how long the accelerators of a workload would wait for the
network and storage that were measured. Formulas, assumptions and a worked example with
numbers are in docs/model.md; the unit tests recompute them by hand, and
benchmarks/validate_model.py holds them against real training on the namespaced test bed.

Per training step (N GPUs, G per node, tensor parallel T, data parallel D = N/T):
  compute   C = the workload's measured compute_s, else 6 x params x tokens / (N x measured matmul
            TFLOPS x matmul_efficiency) from stoker compute, else / (N x peak TFLOPS x MFU)
  TP        4 all-reduces per layer per sequence of seq_len x hidden x 2 B (Megatron),
            hidden behind C x tp_overlap (GEMM/communication overlap; 0 = none); across
            nodes when T > G
  DDP       all-reduce of params/T x grad_bytes in buckets (1 MiB first, then 25 MiB) in
            the order the backward pass (2/3 of C) x overlap produces them: a bucket starts
            when its last gradient exists and the previous bucket is done, so the last
            bucket is never hidden
  FSDP      per unit (layer): 2 all-gathers of its bf16 params + 1 reduce-scatter of its
            gradients, hidden behind C x overlap (prefetch)
  a collective of size S takes S x busfactor / busbw(S), busbw measured at that size
Each component is judged alone: exposed e, idle share e / (C + e), `starving` above the
idle budget. Dataloader and checkpoint are judged on wall time the same way.
"""

from __future__ import annotations

from typing import Any

from reports.evidence.sweeps import Sweep
from reports.judging.workload.model_rows import Measured, idle_share_of, missing, row
from reports.judging.workload.model_storage import checkpoint_row, dataloader_row
from reports.judging.workload.workload import DDP_FIRST_BUCKET_BYTES, Workload
from reports.shared.findings import Component, ModelRow
from reports.shared.ops import bus_factor
from reports.shared.spec import Spec

DEFAULT_GPUS_PER_NODE = 8
# CPU ranks only (Measured.cpu_ranks): the share of communication time hidden behind compute that the compute
# loses to it, because gloo's threads (and, on the test bed, the veth/tc softirqs) run on
# the same cores. Measured on the 2-core namespaced bed (benchmarks/validate_model.py): the
# backward pass with 2 MiB buckets all-reduced beside it ran 0.15 x the overlapped
# communication time longer than the same backward under no_sync(). NCCL on a GPU runs on
# its own stream and SMs, so GPU records get 0: this term never makes a GPU prediction worse.
CPU_COMM_STEAL = 0.15


def _curve(m: Measured, scope: str, op: str) -> tuple[Sweep | None, str]:
    c = m.curves.get((scope, op))
    if c is not None:
        return c, ""
    c = m.curves.get((scope, "all_reduce"))
    return c, (f"no {scope} {op} sweep: the all_reduce busbw was used" if c else "")


def _time(curve: Sweep, op: str, n: int, size: float, count: float) -> tuple[float, float, str]:
    """(bus bytes, seconds) of `count` collectives of `size` bytes among n ranks."""
    bw, note = curve.at(size)
    bus = count * size * bus_factor(op, n)
    return bus, bus / (bw * 1e9), note


def ddp_buckets(total: float, cap: float, first: float = DDP_FIRST_BUCKET_BYTES) -> list[float]:
    """Bucket sizes in the order the backward pass fills them: torch DDP caps the first
    bucket (the last layers' gradients) at 1 MiB, the rest at `cap`; the remainder is the
    first layers' bucket, filled last."""
    sizes: list[float] = []
    left, limit = total, min(first, cap)
    while left > 0:
        sizes.append(min(limit, left))
        left -= sizes[-1]
        limit = cap
    return sizes


def ddp_time(
    curve: Sweep, n: int, sizes: list[float], window: float, steal: float = 0.0
) -> tuple[float, float, float, str]:
    """(bus bytes, communication seconds, exposed seconds, note) of DDP's bucketed all-reduce.
    Gradients appear at an even rate over the backward window; a bucket is reduced once its
    last gradient exists and the bucket before it is done, one at a time (one stream / one
    gloo pair of threads). The last bucket becomes ready at the end of the window, so at
    least its all-reduce is exposed however fast the rest was. With `steal` > 0 (CPU ranks)
    the backward itself stretches by steal x the communication it overlaps, and that
    stretch is exposed time too."""
    total, bus, secs = sum(sizes), 0.0, 0.0
    times: list[float] = []
    notes: list[str] = []
    for size in sizes:
        b, t, note = _time(curve, "all_reduce", n, size, 1)
        times.append(t)
        bus, secs = bus + b, secs + t
        notes.append(note)
    stretched = window
    for _ in range(8):  # the stretch moves the ready times, which moves the overlap: settle it
        done, end, overlap = 0.0, 0.0, 0.0
        for size, t in zip(sizes, times):
            done += size
            start = max(end, stretched * done / total)
            end = start + t
            overlap += max(0.0, min(end, stretched) - start)
        stretched = window + steal * overlap
    exposed = (stretched - window) + max(0.0, end - stretched)
    return bus, secs, exposed, "; ".join(dict.fromkeys(x for x in notes if x))


def _net(scope: str) -> Component:
    return "inter-node network" if scope == "inter-node" else "intra-node network"


def _network_rows(w: Workload, m: Measured, g: int, c: float, usd: float | None) -> list[ModelRow]:
    assert w.params is not None and w.gpus is not None
    n, t, b, budget = w.gpus, w.tensor, w.global_batch_tokens, w.idle_budget
    d = n // t
    e_max = budget / (1 - budget) * c  # the exposed time the budget allows
    rows: list[ModelRow] = []
    if t > 1:
        # a tensor-parallel group larger than a node spans nodes: its all-reduces cross the NICs
        tp_scope = "inter-node" if t > g else "intra-node"
        curve, fb = _curve(m, tp_scope, "all_reduce")
        msg = w.seq_len * w.d_model * 2.0
        count = 4 * w.n_layers * ((b or 0.0) / d) / w.seq_len
        check = f"tensor parallel all_reduce ({t} GPUs)"
        if b is None:
            rows.append(
                missing(
                    "tensor parallel",
                    _net(tp_scope),
                    check,
                    "GB/s",
                    "tensor parallel needs global_batch_tokens",
                )
            )
        elif curve is None:
            rows.append(
                missing("tensor parallel", _net(tp_scope), check, "GB/s", f"no {tp_scope} sweep measured")
            )
        else:
            bus, secs, note = _time(curve, "all_reduce", t, msg, count)
            tp_window = w.tp_overlap * c
            rows.append(
                row(
                    "tensor parallel",
                    _net(tp_scope),
                    check,
                    bus / (tp_window + e_max) / 1e9,
                    bus / secs / 1e9,
                    "GB/s",
                    max(0.0, secs - tp_window),
                    c,
                    budget,
                    usd,
                    message_bytes=msg,
                    per_step=count,
                    comm_s=secs,
                    window_s=tp_window,
                    note="; ".join(x for x in (fb, note) if x),
                )
            )
    if d <= 1:
        return rows
    scope = "inter-node" if d > g // t else "intra-node"
    component = _net(scope)
    if w.data == "ddp":
        curve, fb = _curve(m, scope, "all_reduce")
        total = w.params / t * w.grad_bytes
        msg = min(w.bucket_bytes, total)
        window = w.overlap * (2 / 3) * c
        check = f"DDP gradient all_reduce ({d} ranks)"
        if curve is None:
            return [*rows, missing("data parallel", component, check, "GB/s", f"no {scope} sweep measured")]
        buckets = ddp_buckets(total, w.bucket_bytes)
        bus, secs, exposed, note = ddp_time(curve, d, buckets, window, CPU_COMM_STEAL if m.cpu_ranks else 0.0)
        rows.append(
            row(
                "data parallel",
                component,
                check,
                bus / (window + e_max) / 1e9,
                bus / secs / 1e9,
                "GB/s",
                exposed,
                c,
                budget,
                usd,
                message_bytes=msg,
                buckets=len(buckets),
                last_bucket_bytes=buckets[-1],
                comm_s=secs,
                window_s=window,
                note="; ".join(x for x in (fb, note) if x),
            )
        )
        return rows
    else:
        msg = (
            w.params / t / w.n_layers * w.grad_bytes
        )  # parameters travel as they are trained (bf16 by default)
        msg_rs = w.params / t / w.n_layers * w.grad_bytes
        window = w.overlap * c
        check = f"FSDP all_gather + reduce_scatter ({d} ranks)"
        ag, fb1 = _curve(m, scope, "all_gather")
        rs, fb2 = _curve(m, scope, "reduce_scatter")
        if ag is None or rs is None:
            # name only what is missing (never "lacks an all_gather + reduce_scatter sweep"
            # where all_gather was measured)
            lacking = [op for op, c in (("all_gather", ag), ("reduce_scatter", rs)) if c is None]
            gone = missing(
                "data parallel",
                component,
                check,
                "GB/s",
                f"no {scope} {' or '.join(lacking)} (nor all_reduce) sweep measured",
            )
            gone.extra["ops"] = lacking
            return [*rows, gone]
        bus1, s1, n1 = _time(ag, "all_gather", d, msg, 2 * w.n_layers)
        bus2, s2, n2 = _time(rs, "reduce_scatter", d, msg_rs, w.n_layers)
        bus, secs = bus1 + bus2, s1 + s2
        fb, note = "; ".join(x for x in (fb1, fb2) if x), "; ".join(dict.fromkeys(x for x in (n1, n2) if x))
    if m.cpu_ranks:
        # FSDP overlaps its all-gathers and reduce-scatters through CUDA streams; CPU ranks
        # have none, and on the bed the step was compute + all of the communication
        window = 0.0
        fb = "; ".join(x for x in (fb, "CPU ranks: FSDP communication does not overlap compute") if x)
    exposed = max(0.0, secs - window)
    rows.append(
        row(
            "data parallel",
            component,
            check,
            bus / (window + e_max) / 1e9,
            bus / secs / 1e9,
            "GB/s",
            exposed,
            c,
            budget,
            usd,
            message_bytes=msg,
            comm_s=secs,
            window_s=window,
            note="; ".join(x for x in (fb, note) if x),
        )
    )
    return rows


def gpus_per_node(w: Workload, spec: Spec | None) -> int:
    """The node size the job is priced on: the spec's, else the workload's, else the default."""
    return (
        (spec.gpus_per_node if spec and spec.gpus_per_node else None)
        or w.gpus_per_node
        or DEFAULT_GPUS_PER_NODE
    )


def starvation(w: Workload, spec: Spec | None, m: Measured) -> tuple[list[ModelRow], dict[str, Any]]:
    """Model rows and the summary (step time, compute time, total idle share, $/day lost)."""
    g = gpus_per_node(w, spec)
    n = w.gpus or g
    price = spec.price_per_gpu_hour if spec else None
    usd = n * price * 24 if price is not None else None  # $ per day of the whole job per unit idle share
    summary: dict[str, Any] = {
        "gpus": n,
        "gpus_per_node": g,
        "price_per_gpu_hour": price,
        "idle_budget": w.idle_budget,
    }
    rows: list[ModelRow] = []
    c: float | None = None
    if w.is_training:
        assert w.params is not None
        acc = spec.accelerator if spec else None
        peak = acc.tflops.get(w.dtype) if acc else None
        if w.compute_s is not None:
            c = w.compute_s
            summary["compute_from"] = "compute_s (measured)"
            summary["compute_figure"] = "compute_s"
        # the appetite stoker compute measured, before the catalog's peak
        elif m.compute_tflops and w.global_batch_tokens is not None:
            c = 6 * w.params * w.global_batch_tokens / (n * m.compute_tflops * 1e12 * w.matmul_efficiency)
            summary["compute_from"] = (
                f"6 x params x tokens / (GPUs x {m.compute_desc or f'{m.compute_tflops:.4g} TFLOPS measured'}"
                f" x matmul_efficiency {w.matmul_efficiency:g})"
            )
            summary["compute_figure"] = "measured"
        elif peak is None or w.global_batch_tokens is None:
            summary["why"] = (
                "no accelerator TFLOPS for the model: give accelerator in --spec, or compute_s in the workload"
            )
        else:
            c = 6 * w.params * w.global_batch_tokens / (n * peak * 1e12 * w.mfu)
            summary["compute_from"] = "6 x params x tokens / (GPUs x peak x MFU)"
            summary["compute_figure"] = "catalog peak"
        if c is not None:
            rows.extend(_network_rows(w, m, g, c, usd))
    net_exposed = sum(r.extra.get("exposed_s", 0.0) for r in rows)
    dl = dataloader_row(w, spec, m, g, c, usd)
    ck = checkpoint_row(w, spec, m, usd, g)
    rows.extend(r for r in (dl, ck) if r is not None)
    dl_exposed = dl.extra.get("exposed_s", 0.0) if dl else 0.0
    base = c if c is not None else (dl.extra.get("base_s", 0.0) if dl else 0.0)
    busy = idle_share_of(net_exposed + dl_exposed, base)
    ck_share = ck.idle_share if ck else 0.0
    total = 1 - (1 - busy) * (1 - ck_share)  # compute share of wall time = product of both
    summary.update(
        compute_s=c,
        step_s=None if c is None else c + net_exposed + dl_exposed,
        idle_share=total,
        usd_per_day_lost=None if usd is None else total * usd,
    )
    return rows, summary
