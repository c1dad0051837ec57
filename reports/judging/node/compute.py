"""The accelerators' appetite judged (pure): `kind: "compute"` records (stoker compute) ->
findings, and the figure the starvation model uses.

- a slow device: its best-shape median TFLOPS in a dtype is a low outlier among the node's
  other devices or the fleet's (localise.low_outliers: median minus the larger of 3 robust
  standard deviations and MIN_GAP) -> one `below_spec` finding per device, naming the host,
  the GPU index and UUID, and the clocks, power and throttle reasons read during its sweep;
- the fleet against its accelerator: the median device's share of the catalog's dense peak,
  beside what a healthy one reaches (the catalog's `mamf`, a published mamf-finder figure)
  -> `below_spec` under HEALTHY_SHARE of that figure, else `ok`; `no_reference` without one;
- which accelerator was measured (`measured_on`): a figure stands for the accelerator a workload
  runs on only when it was measured on one — a CPU process's matmul never stands for a GPU's,
  and a GPU of another model never for the named one.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reports.judging.network.localise import low_outliers
from reports.shared import catalog
from reports.shared.findings import Finding, Status

# Healthy GPUs of one model differ by about 5% in matmul throughput (silicon lottery and
# cooling: ml-engineering compute/accelerator/README.md, "5%+ MAMF spread between GPUs" of one
# 8-GPU node), so within 10% of its reference a device is never called slow; a GPU 15% behind
# its siblings is.
MIN_GAP = 0.10
# The published figures come from one torch/CUDA version each; a fleet within 20% of them is
# not called short (a software stack alone moves MAMF by that much: ml-engineering, MI300X
# on ROCm 6.1 vs 6.2).
HEALTHY_SHARE = 0.80
DTYPE_ORDER = ("bf16", "fp16", "fp8", "fp32")
# a workload that runs on CPU processes (the test bed's training) names this accelerator
CPU = "cpu"


@dataclass(frozen=True, kw_only=True, slots=True)
class Device:
    """One device's figures in one dtype, from one compute record."""

    host: str
    gpu: int | None  # GPU index; None for a CPU process
    proc: int
    uuid: str | None
    name: str
    dtype: str
    tflops: float  # best shape's median TFLOPS (the judged statistic)
    max_tflops: float | None
    mean_tflops: float | None  # best shape's mean-iteration TFLOPS: sustained (the model's figure)
    cpu_mean_tflops: float | None = None  # CPU devices: the same on the process's CPU clock
    shape: str
    record: Mapping[str, Any]

    @property
    def label(self) -> str:
        return (
            f"{self.host} GPU {self.gpu}" if self.gpu is not None else f"{self.host} CPU process {self.proc}"
        )


def devices(compute: Sequence[Mapping[str, Any]]) -> list[Device]:
    """Usable records as Devices; a record without a figure (an error) is left out. With
    several records for one device and dtype (repeated runs), the last one counts."""
    out: dict[tuple[str, Any, Any, str], Device] = {}
    for r in compute:
        t = r.get("median_tflops")
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not t > 0:
            continue
        gpu = r.get("gpu") if isinstance(r.get("gpu"), int) else None
        p = r.get("proc")
        proc = p if isinstance(p, int) else 0
        d = Device(
            host=str(r.get("host", "?")),
            gpu=gpu,
            proc=proc,
            uuid=r.get("uuid") or None,
            name=str(r.get("name", "")),
            dtype=str(r.get("dtype", "?")),
            tflops=float(t),
            max_tflops=r.get("max_tflops"),
            mean_tflops=_positive(r.get("mean_tflops")),
            cpu_mean_tflops=_positive(r.get("cpu_mean_tflops")),
            shape=str(r.get("best_shape", "")),
            record=r,
        )
        out[(d.host, gpu, proc if gpu is None else None, d.dtype)] = d
    return list(out.values())


def _positive(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and x > 0 else None


def _order(dtype: str) -> int:
    return DTYPE_ORDER.index(dtype) if dtype in DTYPE_ORDER else len(DTYPE_ORDER)


def _conditions(r: Mapping[str, Any]) -> str:
    """What nvidia-smi said during the sweep, in words ("" when nothing was read)."""
    parts = []
    if r.get("sm_clock_mhz_median") is not None:
        top = f" of {r['sm_clock_max_mhz']:.0f} max" if r.get("sm_clock_max_mhz") else ""
        parts.append(f"SM clock {r['sm_clock_mhz_median']:.0f} MHz{top}")
    if r.get("power_w_max") is not None:
        cap = f"/{r['power_limit_w']:.0f}" if r.get("power_limit_w") else ""
        parts.append(f"power {r['power_w_max']:.0f}{cap} W")
    if r.get("temperature_c_max") is not None:
        parts.append(f"{r['temperature_c_max']:.0f} °C")
    reasons = r.get("throttle_reasons")
    if isinstance(reasons, list):
        parts.append("throttle: " + (", ".join(map(str, reasons)) if reasons else "none"))
    return ", ".join(parts)


def slow_devices(devs: Sequence[Device]) -> list[Finding]:
    """One finding per device that is a low outlier of its node or of the fleet, in any dtype."""
    slow: dict[tuple[str, Any, Any], list[tuple[Device, float, str]]] = {}
    for dtype in sorted({d.dtype for d in devs}, key=_order):
        same = [d for d in devs if d.dtype == dtype]
        groups: list[tuple[str, list[Device]]] = [("the fleet's", same)]
        groups += [(f"{h}'s other", [d for d in same if d.host == h]) for h in sorted({d.host for d in same})]
        for basis, group in groups:
            keyed = {d.label: d for d in group}
            med, low = low_outliers({k: d.tflops for k, d in keyed.items()}, MIN_GAP)
            for k in low:
                d = keyed[k]
                slow.setdefault((d.host, d.gpu, d.proc), []).append((d, med, basis))
    out = []
    for hits in slow.values():
        # one finding per device: the first dtype (bf16 first), its node's basis before the fleet's
        d, med, basis = sorted(hits, key=lambda x: (_order(x[0].dtype), "fleet" in x[2]))[0]
        also = sorted({x[0].dtype for x in hits} - {d.dtype}, key=_order)
        cond = _conditions(d.record)
        uuid = f" ({d.uuid})" if d.uuid else ""
        what = "devices" if d.gpu is None else "GPUs"
        out.append(
            Finding(
                component="gpu",
                check=f"matmul TFLOPS ({d.dtype})",
                status="below_spec",
                measured=d.tflops,
                expected=med,
                unit="TFLOPS",
                hosts=(d.host,),
                message=(
                    f"{d.label}{uuid} runs {d.dtype} matmuls at {d.tflops:.4g} TFLOPS against a median of "
                    f"{med:.4g} for {basis} {what} ({1 - d.tflops / med:.0%} slower"
                    + (f"; also slow in {', '.join(also)}" if also else "")
                    + ")"
                    + (f"; during its sweep: {cond}" if cond else "")
                    + ": check its cooling, power cap and clocks (nvidia-smi -q -d PERFORMANCE,CLOCK,POWER) or drain it."
                ),
                extra={
                    "gpu": d.gpu,
                    "uuid": d.uuid,
                    "dtype": d.dtype,
                    "best_shape": d.shape,
                    "basis": "fleet" if "fleet" in basis else "node",
                    **{
                        k: d.record.get(k)
                        for k in (
                            "sm_clock_mhz_median",
                            "sm_clock_max_mhz",
                            "power_w_max",
                            "throttle_reasons",
                        )
                        if d.record.get(k) is not None
                    },
                },
            )
        )
    return out


def peak_findings(devs: Sequence[Device]) -> list[Finding]:
    """Per accelerator model and dtype: the median device against the catalog's peak and MAMF."""
    out = []
    by: dict[tuple[str, str], list[Device]] = {}
    for d in devs:
        acc = catalog.match_gpu_name(d.name) if d.gpu is not None else None
        if acc is not None and d.dtype in acc.tflops:
            by.setdefault((acc.name, d.dtype), []).append(d)
    for (name, dtype), group in sorted(by.items(), key=lambda x: (x[0][0], _order(x[0][1]))):
        acc = catalog.accelerator(name)
        med = statistics.median(d.tflops for d in group)
        peak = acc.tflops[dtype]
        ref = acc.mamf.get(dtype)
        head = (
            f"{len(group)} {name} GPUs run {dtype} matmuls at a median {med:.4g} TFLOPS, "
            f"{med / peak:.0%} of the {peak:g} TFLOPS dense peak"
        )
        status: Status
        if ref is None:
            status = "no_reference"
            msg = f"{head}; no published figure of what a healthy one reaches to judge it by."
        else:
            status = "ok" if med >= HEALTHY_SHARE * ref else "below_spec"
            msg = f"{head}; a healthy one reaches {ref:g} ({ref / peak:.0%}; {acc.mamf_source})" + (
                "."
                if status == "ok"
                else f": under {HEALTHY_SHARE:.0%} of that; check power caps, clocks and cooling, and the torch/CUDA version."
            )
        out.append(
            Finding(
                component="gpu",
                check=f"matmul TFLOPS vs peak ({dtype})",
                status=status,
                measured=med,
                expected=None if ref is None else HEALTHY_SHARE * ref,
                unit="TFLOPS",
                hosts=tuple(sorted({d.host for d in group})),
                message=msg,
                extra={"peak_tflops": peak, "mamf_tflops": ref, "share_of_peak": round(med / peak, 4)},
            )
        )
    return out


def compute_findings(compute: Sequence[Mapping[str, Any]]) -> list[Finding]:
    """Every finding on the compute records: slow devices, then the fleet against its model."""
    devs = devices(compute)
    return slow_devices(devs) + peak_findings(devs)


def compute_notes(compute: Sequence[Mapping[str, Any]]) -> list[str]:
    """One line per dtype: what the devices reached (the report shows it even where nothing is
    judged, e.g. CPU matmul with no catalog figure)."""
    devs = devices(compute)
    out = []
    for dtype in sorted({d.dtype for d in devs}, key=_order):
        same = [d for d in devs if d.dtype == dtype]
        med = statistics.median(d.tflops for d in same)
        lo, hi = min(same, key=lambda d: d.tflops), max(same, key=lambda d: d.tflops)
        spread = (
            f"; slowest {lo.label} {lo.tflops:.4g}, fastest {hi.label} {hi.tflops:.4g}"
            if len(same) > 1
            else ""
        )
        out.append(
            f"compute: {dtype} matmul median {med:.4g} TFLOPS per device over {len(same)} device(s) "
            f"(best-shape median iteration; {lo.record.get('timer', '?')}){spread}"
        )
    return out


@dataclass(frozen=True, kw_only=True, slots=True)
class Appetite:
    """The measured matmul ceiling the model uses: per device, in the workload's dtype."""

    tflops: float  # the slowest device's best-shape median TFLOPS
    dtype: str
    devices: int
    desc: str


def measured_on(d: Device, accelerator: str | None) -> bool:
    """Whether `d`'s figure stands for `accelerator`, what a workload runs on: CPU for a CPU
    process only; a catalog accelerator name for a GPU of that model only; None (a GPU whose
    model nobody named) for any GPU. A CPU's matmul never stands for a GPU's."""
    if accelerator == CPU:
        return d.gpu is None
    if d.gpu is None:
        return False
    if accelerator is None:
        return True
    got = catalog.match_gpu_name(d.name)
    return got is not None and got.name == accelerator


def measured_devices(
    compute: Sequence[Mapping[str, Any]], dtype: str, accelerator: str | None
) -> list[Device]:
    """The devices whose `dtype` figure stands for `accelerator` (measured_on)."""
    return [d for d in devices(compute) if d.dtype == dtype and measured_on(d, accelerator)]


def appetite(
    compute: Sequence[Mapping[str, Any]], dtype: str, accelerator: str | None = None
) -> Appetite | None:
    """The slowest device's sustained TFLOPS in `dtype` (its best shape's mean iteration, else
    its median where a record has no mean): synchronous data-parallel training waits for its
    slowest rank every step (ml-engineering compute/accelerator/README.md: for achievable MFU
    "pick the value of the slowest accelerator"), and a step's time counts every stall, as a
    mean does. Only devices of the accelerator the workload runs on count (`measured_on`;
    None: any GPU). None when not measured there."""
    devs = measured_devices(compute, dtype, accelerator)
    if not devs:
        return None

    def sustained(d: Device) -> float:
        # a CPU's cores are shared with other processes: the time they worked for this one is its
        # CPU time, as a GPU's is its event time (docs/model.md)
        return d.cpu_mean_tflops or d.mean_tflops or d.tflops

    slowest = min(devs, key=sustained)
    names = sorted({d.name for d in devs})
    stat = "CPU-time mean" if slowest.cpu_mean_tflops else "mean" if slowest.mean_tflops else "median"
    return Appetite(
        tflops=sustained(slowest),
        dtype=dtype,
        devices=len(devs),
        desc=f"measured {dtype} matmul {sustained(slowest):.4g} TFLOPS per device ({stat} iteration of the slowest "
        f"of {len(devs)} {'/'.join(names)}: {slowest.label})",
    )
