"""Clocks, power and throttle reasons of each GPU while the sweep runs, read with nvidia-smi
(parse_* are pure; Sampler is the IO, through a `run` callable so tests pass recorded output).

The query is `nvidia-smi --query-gpu=<SMI_QUERY> --format=csv,noheader,nounits`; the throttle
field is NVML's nvmlClocksThrottleReasons bit mask printed as hex ("0x0000000000000004").
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from netbench.inventory.hardware import Runner, run_tool
from netbench.inventory.parse import csv_rows

SMI_QUERY = (
    "index",
    "uuid",
    "name",
    "clocks.sm",
    "clocks.max.sm",
    "power.draw",
    "power.limit",
    "temperature.gpu",
    "clocks_throttle_reasons.active",
)
# NVML's nvmlClocksThrottleReasons bits (nvml.h; docs.nvidia.com/deploy/nvml-api, "ClocksThrottleReasons")
THROTTLE_BITS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}
INTERVAL_S = 2.0


def throttle_reasons(mask: str | None) -> list[str]:
    """Names of the bits set in an nvidia-smi hex mask; idle is left out (between shapes the
    GPU idles for a moment, which says nothing about its health)."""
    if not mask:
        return []
    try:
        bits = int(mask, 16)
    except ValueError:
        return []
    return [name for bit, name in THROTTLE_BITS.items() if bits & bit and name != "gpu_idle"]


def _num(v: str | None) -> float | None:
    try:
        return float(v) if v is not None else None
    except ValueError:
        return None


def parse_sample(text: str) -> list[dict[str, Any]]:
    """One nvidia-smi reading: a dict per GPU."""
    out = []
    for r in csv_rows(text, SMI_QUERY):
        if r["index"] is None or not r["index"].isdigit():
            continue
        out.append(
            {
                "gpu": int(r["index"]),
                "uuid": r["uuid"],
                "name": r["name"],
                "sm_clock_mhz": _num(r["clocks.sm"]),
                "sm_clock_max_mhz": _num(r["clocks.max.sm"]),
                "power_w": _num(r["power.draw"]),
                "power_limit_w": _num(r["power.limit"]),
                "temperature_c": _num(r["temperature.gpu"]),
                "throttle": throttle_reasons(r["clocks_throttle_reasons.active"]),
            }
        )
    return out


def summarise(samples: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One GPU's readings during its sweep -> the figures its record carries."""
    if not samples:
        return {}

    def vals(key: str) -> list[float]:
        return [s[key] for s in samples if s.get(key) is not None]

    clocks = vals("sm_clock_mhz")
    reasons = sorted({r for s in samples for r in s.get("throttle", [])})
    return {
        "uuid": samples[-1].get("uuid"),
        "sm_clock_mhz_median": statistics.median(clocks) if clocks else None,
        "sm_clock_mhz_min": min(clocks) if clocks else None,
        "sm_clock_max_mhz": max(vals("sm_clock_max_mhz"), default=None),
        "power_w_max": max(vals("power_w"), default=None),
        "power_limit_w": min(vals("power_limit_w"), default=None),
        "temperature_c_max": max(vals("temperature_c"), default=None),
        "throttle_reasons": reasons,
        "smi_samples": len(samples),
    }


def between(samples: Sequence[dict[str, Any]], start: float, end: float) -> list[dict[str, Any]]:
    """The readings taken in [start, end] (time.monotonic(), the clock every process of the
    node shares): one dtype's window, not the idle time before it or another dtype's."""
    return [s for s in samples if s.get("t") is not None and start <= s["t"] <= end]


class Sampler:
    """Reads nvidia-smi every INTERVAL_S in a thread while the sweep runs; each reading is
    stamped with time.monotonic() (`t`) so that it can be given to the dtype it overlapped."""

    def __init__(
        self,
        run: Runner = run_tool,
        interval_s: float = INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._run = run
        self._clock = clock
        self._interval = interval_s
        self._stop = threading.Event()
        self.samples: dict[int, list[dict[str, Any]]] = {}
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def read_once(self) -> list[dict[str, Any]]:
        text = self._run(
            ["nvidia-smi", f"--query-gpu={','.join(SMI_QUERY)}", "--format=csv,noheader,nounits"]
        )
        rows = parse_sample(text) if text else []
        now = self._clock()
        for row in rows:
            row["t"] = now
            self.samples.setdefault(row["gpu"], []).append(row)
        return rows

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            self.read_once()

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def summary(self, gpu: int) -> dict[str, Any]:
        return summarise(self.samples.get(gpu, []))

    def gpu_of(self, uuid: str | None, index: int) -> int:
        """nvidia-smi's index of the GPU torch calls `index` with this UUID: under
        CUDA_VISIBLE_DEVICES torch renumbers the GPUs it sees, nvidia-smi does not."""
        want = (uuid or "").lower().removeprefix("gpu-")
        for gpu, rows in self.samples.items():
            if want and rows and str(rows[-1].get("uuid") or "").lower().removeprefix("gpu-") == want:
                return gpu
        return index

    def match(self, uuid: str | None, index: int) -> tuple[int, dict[str, Any]]:
        """(nvidia-smi's index, the summary of all its readings) of that GPU."""
        gpu = self.gpu_of(uuid, index)
        return gpu, self.summary(gpu)

    def window(self, gpu: int, start: float, end: float) -> dict[str, Any]:
        """The summary of one GPU's readings in [start, end] ({} when none fell inside)."""
        return summarise(between(self.samples.get(gpu, []), start, end))
