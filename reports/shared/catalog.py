"""The catalog of advertised figures and of what healthy systems reach: data files under
reports/judging/catalog/ (YAML, each figure with its source), read once and looked up by name.

Names resolve case-insensitively and ignore '-', '_' and spaces ("H100-SXM" = "h100 sxm" =
"H100_SXM"); an unknown name raises UsageError with the nearest known names.
"""

from __future__ import annotations

import difflib
import functools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from reports.shared.errors import UsageError

# the data stays under judging/ (the report cites reports/judging/catalog/references.yaml)
CATALOG_DIR = Path(__file__).resolve().parents[1] / "judging" / "catalog"


@dataclass(frozen=True, kw_only=True, slots=True)
class Accelerator:
    name: str
    tflops: dict[str, float]  # dense peak per dtype, 10^12 FLOP/s
    hbm_GB: float
    hbm_TBps: float
    intra_link: str  # catalog link name
    host_link: str  # catalog link name (host <-> device copies)
    gpus_per_node: int
    gpu_names: tuple[str, ...] = ()
    source: str = ""
    mamf: dict[str, float] = field(default_factory=dict)  # measured matmul TFLOPS of a healthy one
    mamf_source: str = ""


@dataclass(frozen=True, kw_only=True, slots=True)
class Link:
    name: str
    GBps: float  # unidirectional, per `per`
    per: str  # gpu | port | x16 | interface
    in_network_reduction: bool = False
    source: str = ""


@dataclass(frozen=True, kw_only=True, slots=True)
class StorageClass:
    name: str
    read_GBps: float
    write_GBps: float
    per: str  # device | TiB
    source: str = ""


@dataclass(frozen=True, kw_only=True, slots=True)
class NetReference:
    """A busbw plateau published for a healthy system on one link (references.yaml `network`)."""

    link: str  # a links.yaml name
    algo: str  # ring | nvls
    scope: str  # intra-node | inter-node
    ops: tuple[str, ...]
    per: str  # gpu | port
    busbw_GBps: float
    high_GBps: float
    by_gpus: dict[int, float]  # the figure per GPU count in the collective; empty: any count
    min_bytes: int  # the smallest message size the source measured the figure at (0: not stated)
    conditions: str
    source: str

    def figure(self, gpus: int) -> float | None:
        """The figure for a collective over `gpus` GPUs; None for a count the source did not measure."""
        if not self.by_gpus:
            return self.busbw_GBps
        return self.by_gpus.get(gpus)


@dataclass(frozen=True, kw_only=True, slots=True)
class HostLinkReference:
    """Pinned host<->device copies a healthy system reaches on one link (references.yaml `host_link`)."""

    link: str
    h2d_GBps: float | None
    d2h_GBps: float | None
    conditions: str
    source: str


@dataclass(frozen=True, kw_only=True, slots=True)
class _Table:
    entries: dict[str, dict[str, Any]]
    index: dict[str, str] = field(default_factory=dict)  # normalised name or alias -> name


def normalise(name: str) -> str:
    """'H100-SXM' -> 'h100sxm': lower case, without '-', '_', '.', spaces."""
    return re.sub(r"[-_\s.]", "", str(name).lower())


# libyaml's parser when PyYAML has it: the same documents (the constructor is the same), ~10x
# faster; a 1,000-node report read the four files in ~0.1 s with the Python one
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@functools.cache
def _load(filename: str, key: str) -> _Table:
    with open(CATALOG_DIR / filename, encoding="utf-8") as fh:
        entries: dict[str, dict[str, Any]] = yaml.load(fh, Loader=_LOADER)[key]  # a safe loader either way
    index: dict[str, str] = {}
    for name, entry in entries.items():
        for alias in (name, *entry.get("aliases", ())):
            index[normalise(alias)] = name
    return _Table(entries=entries, index=index)


_KINDS = {
    "accelerator": ("accelerators.yaml", "accelerators"),
    "link": ("links.yaml", "links"),
    "storage class": ("storage.yaml", "storage"),
    "model preset": ("workloads.yaml", "models"),
    "dataloader preset": ("workloads.yaml", "dataloaders"),
}


def names(kind: str) -> list[str]:
    """The canonical names of one kind ('accelerator', 'link', 'storage class', ...)."""
    return list(_load(*_KINDS[kind]).entries)


def resolve(kind: str, name: str) -> tuple[str, dict[str, Any]]:
    """(canonical name, raw entry); UsageError with "did you mean" when unknown."""
    table = _load(*_KINDS[kind])
    key = normalise(name)
    if key in table.index:
        canonical = table.index[key]
        return canonical, table.entries[canonical]
    close = difflib.get_close_matches(key, list(table.index), n=3, cutoff=0.5)
    suggestions = list(dict.fromkeys(table.index[c] for c in close))
    hint = f"did you mean {' or '.join(suggestions)}? " if suggestions else ""
    raise UsageError(f"unknown {kind} {name!r}: {hint}known: {', '.join(table.entries)}")


def accelerator(name: str) -> Accelerator:
    canonical, e = resolve("accelerator", name)
    return Accelerator(
        name=canonical,
        tflops={k: float(v) for k, v in e["tflops"].items()},
        hbm_GB=float(e["hbm_GB"]),
        hbm_TBps=float(e["hbm_TBps"]),
        intra_link=e["intra_link"],
        host_link=e["host_link"],
        gpus_per_node=int(e["gpus_per_node"]),
        gpu_names=tuple(e.get("gpu_names", ())),
        source=e["source"],
        mamf={k: float(v) for k, v in e.get("mamf", {}).items()},
        mamf_source=e.get("mamf_source", ""),
    )


@functools.cache
def _references() -> dict[str, Any]:
    with open(CATALOG_DIR / "references.yaml", encoding="utf-8") as fh:
        doc: dict[str, Any] = yaml.load(fh, Loader=_LOADER)  # a safe loader either way
    return doc


@functools.cache
def net_references() -> tuple[NetReference, ...]:
    """Every published busbw plateau of a healthy system, in the file's order."""
    return tuple(
        NetReference(
            link=e["link"],
            algo=e["algo"],
            scope=e["scope"],
            ops=tuple(e["ops"]),
            per=e["per"],
            busbw_GBps=float(e["busbw_GBps"]),
            high_GBps=float(e.get("high_GBps", e["busbw_GBps"])),
            by_gpus={int(k): float(v) for k, v in e.get("by_gpus", {}).items()},
            min_bytes=int(e.get("min_bytes", 0)),
            conditions=e["conditions"],
            source=e["source"],
        )
        for e in _references()["network"]
    )


def net_reference(link_name: str, op: str, algo: str) -> NetReference | None:
    """The healthy figure for `op` on a link with an algorithm (ring, nvls); None when none is published."""
    for r in net_references():
        if r.link == link_name and r.algo == algo and op in r.ops:
            return r
    return None


def host_link_reference(link_name: str) -> HostLinkReference | None:
    e = _references()["host_link"].get(link_name)
    if e is None:
        return None
    h2d, d2h = e.get("h2d_GBps"), e.get("d2h_GBps")
    return HostLinkReference(
        link=link_name,
        h2d_GBps=float(h2d) if h2d is not None else None,
        d2h_GBps=float(d2h) if d2h is not None else None,
        conditions=e["conditions"],
        source=e["source"],
    )


def link(name: str) -> Link:
    canonical, e = resolve("link", name)
    return Link(
        name=canonical,
        GBps=float(e["GBps"]),
        per=e["per"],
        in_network_reduction=bool(e.get("in_network_reduction", False)),
        source=e["source"],
    )


def storage_class(name: str) -> StorageClass:
    canonical, e = resolve("storage class", name)
    return StorageClass(
        name=canonical,
        read_GBps=float(e["read_GBps"]),
        write_GBps=float(e["write_GBps"]),
        per=e["per"],
        source=e["source"],
    )


# The vendor's word in front of a model name: nvidia-smi prints "NVIDIA H100 80GB HBM3" on
# current drivers and "Tesla V100-SXM2-32GB" or "A100-SXM4-40GB" on older ones; amd-smi and
# rocm-smi "AMD Instinct MI300X"
VENDOR_WORDS = frozenset({"nvidia", "tesla", "amd", "intel", "habana"})


def model_key(reported: str) -> str:
    """A device name as a key: lower case, words split on spaces, '-' and '_' and joined by one
    space, the vendor's words in front dropped ("NVIDIA A100-SXM4-40GB" -> "a100 sxm4 40gb")."""
    words = [w for w in re.split(r"[\s_-]+", str(reported).lower()) if w]
    while words and words[0] in VENDOR_WORDS:
        words.pop(0)
    return " ".join(words)


@functools.cache
def _gpu_name_table() -> dict[str, str]:
    table: dict[str, str] = {}
    for name, entry in _load(*_KINDS["accelerator"]).entries.items():
        for model in entry.get("gpu_names", ()):
            table[model_key(model)] = name
    return table


def match_gpu_name(reported: str) -> Accelerator | None:
    """The accelerator whose `gpu_names` holds this device name, the whole name compared
    (model_key): "NVIDIA H100 80GB HBM3" -> h100-sxm. None when no entry lists it, never a
    guess: a name that merely contains another's ("NVIDIA GH200 480GB" holds "H200", "NVIDIA
    A100 80GB PCIe" holds "A100 80GB") is another device, with other figures."""
    name = _gpu_name_table().get(model_key(reported))
    return accelerator(name) if name else None
