"""The workload (`--workload FILE` or a preset name, docs/contract.md): what the accelerators
will need of the network and storage.

`load_workload(path_or_preset)` reads a YAML file (which may name a `preset` and override
its fields) or takes a preset name directly (llama-8b, llama-70b, llama-405b, or a
dataloader-only preset: llm-text, unet3d, resnet50, cosmoflow). Errors name the file,
the field and what was expected.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reports.judging.storage.savepath import CHECKPOINT_FORMATS
from reports.shared import catalog
from reports.shared.errors import UsageError
from reports.shared.spec import Fields, read_yaml

DDP_BUCKET_BYTES = 25 * 2**20  # torch DDP's default bucket_cap_mb=25
DDP_FIRST_BUCKET_BYTES = 2**20  # torch DDP's first bucket (the last layers' gradients): 1 MiB
DEFAULT_LAYERS = 32


@dataclass(frozen=True, kw_only=True, slots=True)
class Dataloader:
    name: str
    bytes_per_sample: float | None = None
    samples_per_s_per_gpu: float | None = None  # given, or batch / compute_s
    bytes_per_token: float | None = None  # llm-text: demand follows the model's tokens/s
    batch: int | None = None
    compute_s: dict[str, float] = field(default_factory=dict)  # MLPerf: per emulated accelerator
    path: str | None = None  # which storage path it reads (default: shared)


@dataclass(frozen=True, kw_only=True, slots=True)
class Checkpoint:
    interval_minutes: float = 60.0
    bytes_per_param: float = 14.0  # MLPerf Storage v2.0: weights + optimizer
    async_: bool = False
    path: str | None = None
    # which save the job makes, so which record the model takes (reports/judging/storage/savepath.py)
    format: str = "torch.save"  # torch.save | dcp | async


@dataclass(frozen=True, kw_only=True, slots=True)
class Workload:
    name: str = "custom"
    file: str = ""
    params: float | None = None
    layers: int | None = None
    hidden: int | None = None
    seq_len: int = 8192
    gpus: int | None = None
    gpus_per_node: int | None = None
    data: str = "fsdp"  # ddp | fsdp
    tensor: int = 1  # tensor-parallel degree (beyond a node's GPUs it crosses nodes)
    global_batch_tokens: float | None = None
    mfu: float = 0.40
    compute_s: float | None = None  # measured compute time of one step; replaces the FLOPs estimate
    dtype: str = "bf16"
    # what the job runs on: a catalog accelerator name, "cpu", or None (the spec's accelerator,
    # else a GPU of any model); a compute figure counts only when measured on it
    accelerator: str | None = None
    # the real step's FLOPS over the measured matmul ceiling (stoker compute), used when
    # compute records exist and compute_s is not given; 0.5 = MFU 0.40 / H100 MAMF 0.80 (docs/model.md)
    matmul_efficiency: float = 0.5
    grad_bytes: float = 2.0  # bytes per gradient (and FSDP parameter) element on the wire
    bucket_bytes: float = DDP_BUCKET_BYTES
    overlap: float = 1.0  # share of the overlap window data-parallel communication may hide in
    tp_overlap: float = 0.5  # share of compute tensor-parallel collectives hide behind (0: none)
    dataloader: Dataloader | None = None
    checkpoint: Checkpoint | None = None
    idle_budget: float = 0.05
    notes: tuple[str, ...] = ()

    @property
    def is_training(self) -> bool:
        return (
            self.params is not None
            and self.gpus is not None
            and (self.global_batch_tokens is not None or self.compute_s is not None)
        )

    @property
    def n_layers(self) -> int:
        return self.layers or DEFAULT_LAYERS

    @property
    def d_model(self) -> int:
        """The hidden size, or the usual estimate params ~ 12 x layers x hidden^2."""
        if self.hidden:
            return self.hidden
        return int(math.sqrt((self.params or 0.0) / (12 * self.n_layers)))


_KEYS = (
    "preset",
    "name",
    "params",
    "layers",
    "hidden",
    "seq_len",
    "gpus",
    "gpus_per_node",
    "parallelism",
    "global_batch_tokens",
    "mfu",
    "matmul_efficiency",
    "compute_s",
    "dtype",
    "accelerator",
    "grad_bytes",
    "bucket_bytes",
    "overlap",
    "tp_overlap",
    "dataloader",
    "checkpoint",
    "idle_budget",
    "source",
)


def _merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """The preset with the file's fields on top; nested mappings merge one level deep."""
    out = dict(base)
    for k, v in over.items():
        out[k] = {**out[k], **v} if isinstance(v, Mapping) and isinstance(out.get(k), Mapping) else v
    return out


def _dataloader(f: Fields, value: Any) -> Dataloader:
    where = "dataloader"
    if isinstance(value, str):
        value = {"preset": value}
    m = f.mapping(value, where)
    f.known_keys(m, where, ("preset", "bytes_per_sample", "samples_per_s_per_gpu", "bytes_per_token", "path"))
    name = "custom"
    if "preset" in m:
        name = f.catalog_name("dataloader preset", m["preset"], f"{where}.preset")
        m = _merge(
            {
                k: v
                for k, v in catalog.resolve("dataloader preset", name)[1].items()
                if k not in ("source", "au_pass")
            },
            {k: v for k, v in m.items() if k != "preset"},
        )
    kw: dict[str, Any] = {"name": name}
    for key in ("bytes_per_sample", "samples_per_s_per_gpu", "bytes_per_token"):
        if key in m:
            kw[key] = f.number(m[key], f"{where}.{key}")
    if "batch" in m:
        kw["batch"] = f.integer(m["batch"], f"{where}.batch")
    if "compute_s" in m:
        kw["compute_s"] = {
            str(k): f.number(v, f"{where}.compute_s.{k}")
            for k, v in f.mapping(m["compute_s"], f"{where}.compute_s").items()
        }
    if "path" in m:
        kw["path"] = f.text(m["path"], f"{where}.path")
    dl = Dataloader(**kw)
    has_rate = dl.samples_per_s_per_gpu is not None or (dl.batch and dl.compute_s)
    if dl.bytes_per_token is None and (dl.bytes_per_sample is None or not has_rate):
        raise f.fail(
            where, "a preset, bytes_per_token, or bytes_per_sample with samples_per_s_per_gpu", dict(value)
        )
    return dl


def _checkpoint(f: Fields, value: Any) -> Checkpoint:
    m = f.mapping(value, "checkpoint")
    f.known_keys(m, "checkpoint", ("interval_minutes", "bytes_per_param", "async", "path", "format"))
    kw: dict[str, Any] = {}
    for key in ("interval_minutes", "bytes_per_param"):
        if key in m:
            kw[key] = f.number(m[key], f"checkpoint.{key}")
    if "async" in m:
        if not isinstance(m["async"], bool):
            raise f.fail("checkpoint.async", "true or false", m["async"])
        kw["async_"] = m["async"]
    if "path" in m:
        kw["path"] = f.text(m["path"], "checkpoint.path")
    if "format" in m:
        kw["format"] = f.text(m["format"], "checkpoint.format", CHECKPOINT_FORMATS)
        kw["async_"] = kw["format"] == "async"  # the format says it (a preset's async: false included)
    elif kw.get("async_"):
        kw["format"] = "async"
    return Checkpoint(**kw)


def parse_workload(data: Mapping[str, Any], file: str) -> Workload:
    f = Fields(file)
    f.known_keys(data, "", _KEYS)
    name = "custom"
    if "preset" in data:
        name = f.catalog_name("model preset", data["preset"], "preset")
        data = _merge(
            catalog.resolve("model preset", name)[1], {k: v for k, v in data.items() if k != "preset"}
        )
    kw: dict[str, Any] = {"name": str(data.get("name", name)), "file": file}
    for key in ("params", "global_batch_tokens", "grad_bytes", "bucket_bytes", "compute_s"):
        if key in data:
            kw[key] = f.number(data[key], key)
    for key in ("layers", "hidden", "seq_len", "gpus", "gpus_per_node"):
        if key in data:
            kw[key] = f.integer(data[key], key)
    if "mfu" in data:
        kw["mfu"] = f.number(data["mfu"], "mfu", maximum=1.0)
    if "matmul_efficiency" in data:
        kw["matmul_efficiency"] = f.number(data["matmul_efficiency"], "matmul_efficiency", maximum=1.0)
    for key in ("overlap", "tp_overlap"):
        if key in data:
            kw[key] = f.number(data[key], key, positive=False, maximum=1.0)
    if "idle_budget" in data:
        kw["idle_budget"] = f.number(data["idle_budget"], "idle_budget", maximum=0.99)
    if "dtype" in data:
        kw["dtype"] = f.text(data["dtype"], "dtype")
    if "accelerator" in data:
        acc = f.text(data["accelerator"], "accelerator")
        kw["accelerator"] = (
            "cpu" if acc.lower() == "cpu" else f.catalog_name("accelerator", acc, "accelerator")
        )
    par = f.mapping(data.get("parallelism", {}), "parallelism")
    f.known_keys(par, "parallelism", ("data", "tensor"))
    if "data" in par:
        kw["data"] = f.text(par["data"], "parallelism.data", ("ddp", "fsdp"))
    if "tensor" in par:
        kw["tensor"] = f.integer(par["tensor"], "parallelism.tensor")
    if "dataloader" in data:
        kw["dataloader"] = _dataloader(f, data["dataloader"])
    if "checkpoint" in data:
        kw["checkpoint"] = _checkpoint(f, data["checkpoint"])
    wl = Workload(**kw)
    if wl.gpus and wl.gpus % wl.tensor:
        raise f.fail("parallelism.tensor", f"a divisor of gpus ({wl.gpus})", wl.tensor)
    if wl.params is None and wl.dataloader is None:
        raise f.fail(
            "top level", "a preset, params (with gpus and global_batch_tokens), or a dataloader", dict(data)
        )
    return wl


def load_workload(path_or_preset: str | Path) -> Workload:
    """A YAML file, or a preset name when no such file exists."""
    text = str(path_or_preset)
    if not Path(text).exists():
        for kind in ("model preset", "dataloader preset"):
            if catalog.normalise(text) in {catalog.normalise(n) for n in catalog.names(kind)}:
                data: dict[str, Any] = (
                    {"preset": text}
                    if kind == "model preset"
                    else {"name": text, "dataloader": {"preset": text}}
                )
                return parse_workload(data, f"preset {text}")
        known = catalog.names("model preset") + catalog.names("dataloader preset")
        close = difflib.get_close_matches(text, known, n=2)
        hint = f"did you mean {' or '.join(close)}? " if close else ""
        raise UsageError(
            f"workload {text!r} is neither a file nor a preset: {hint}presets: {', '.join(known)}"
        )
    f, content = read_yaml(path_or_preset, "workload")
    return parse_workload(content, f.file)
