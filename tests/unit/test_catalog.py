"""The catalog: every figure has a source, names resolve loosely, unknown names get hints."""

from __future__ import annotations

import pytest

from reports.shared import catalog
from reports.shared.errors import UsageError

KINDS = ("accelerator", "link", "storage class", "model preset", "dataloader preset")


@pytest.mark.parametrize("kind", KINDS)
def test_every_entry_has_a_source(kind: str) -> None:
    for name in catalog.names(kind):
        _, entry = catalog.resolve(kind, name)
        assert entry.get("source", "").strip(), f"{kind} {name} has no source"


def test_required_entries_exist() -> None:
    assert set(catalog.names("accelerator")) >= {
        "a100-sxm",
        "h100-sxm",
        "h100-pcie",
        "h200",
        "b200",
        "mi250x",
        "mi300x",
        "gaudi2",
    }
    assert set(catalog.names("link")) >= {
        "nvlink3",
        "nvlink4",
        "nvlink5",
        "pcie4-x16",
        "pcie5-x16",
        "pcie6-x16",
        "ib-hdr",
        "ib-ndr",
        "ib-xdr",
        "efa-v1",
        "efa-v2",
        "efa-v3",
        "ethernet-100g",
        "ethernet-200g",
        "ethernet-400g",
        "ethernet-800g",
    }
    assert set(catalog.names("storage class")) >= {
        "nvme-gen4",
        "nvme-gen5",
        "lustre-125",
        "lustre-250",
        "lustre-500",
        "lustre-1000",
    }
    assert catalog.names("model preset") == ["llama-8b", "llama-70b", "llama-405b"]
    assert catalog.names("dataloader preset") == ["llm-text", "unet3d", "resnet50", "cosmoflow"]


@pytest.mark.parametrize("spelling", ["H100-SXM", "h100_sxm", "H100 SXM", "h100sxm", "H100"])
def test_names_resolve_loosely(spelling: str) -> None:
    assert catalog.accelerator(spelling).name == "h100-sxm"


def test_figures_are_unidirectional_GBps() -> None:
    # 400 Gb/s per port / 8 = 50 GB/s; NVLink4 900 GB/s bidirectional -> 450 one way
    assert catalog.link("ib-ndr").GBps == 50.0
    assert catalog.link("IB_HDR").GBps == 25.0
    assert catalog.link("ib-xdr").GBps == 100.0
    assert catalog.link("nvlink4").GBps == 450.0
    assert catalog.link("NVLink3").GBps == 300.0
    assert catalog.link("nvlink5").GBps == 900.0
    assert catalog.link("pcie5").GBps == 63.0
    assert catalog.link("400GbE").GBps == 50.0
    # p5.48xlarge: 32 x 100 Gb/s EFA = 3,200 Gb/s = 400 GB/s per node
    assert 32 * catalog.link("efa-v2").GBps == 400.0
    assert 16 * catalog.link("efa-v3").GBps == 400.0


def test_accelerator_figures() -> None:
    h100 = catalog.accelerator("h100-sxm")
    assert (h100.tflops["bf16"], h100.tflops["fp8"], h100.hbm_GB, h100.hbm_TBps) == (989, 1979, 80, 3.35)
    assert h100.intra_link == "nvlink4" and h100.gpus_per_node == 8
    assert catalog.accelerator("mi300x").tflops["fp8"] == 2614.9  # dense, not the sparsity figure
    assert catalog.accelerator("a100").tflops["bf16"] == 312
    for name in catalog.names("accelerator"):
        acc = catalog.accelerator(name)
        catalog.link(acc.intra_link)  # every default link is in the catalog
        catalog.link(acc.host_link)


def test_unknown_name_suggests_the_nearest() -> None:
    with pytest.raises(UsageError, match=r"unknown link 'ib-nrd': did you mean ib-ndr"):
        catalog.link("ib-nrd")
    with pytest.raises(UsageError, match=r"did you mean h100-sxm"):
        catalog.accelerator("H10O-SXM")
    with pytest.raises(UsageError, match=r"known: a100-sxm, h100-sxm"):
        catalog.accelerator("tpu-v5")


@pytest.mark.parametrize(
    ("reported", "expected"),
    [
        ("NVIDIA H100 80GB HBM3", "h100-sxm"),
        ("NVIDIA H100 PCIe", "h100-pcie"),
        ("NVIDIA H200", "h200"),
        ("NVIDIA A100-SXM4-40GB", "a100-sxm"),
        ("NVIDIA B200", "b200"),
        ("AMD Instinct MI300X OAM", "mi300x"),
        ("Tesla V100-SXM2-32GB", None),
        # the whole name, never a part of it (nvidia-smi's names of these devices)
        ("NVIDIA H100 NVL", "h100-nvl"),
        ("NVIDIA GH200 480GB", None),  # holds "H200", is not one
        ("NVIDIA GH200 144G HBM3e", None),
        ("NVIDIA H200 NVL", None),  # a PCIe card with other figures
        ("NVIDIA A100 80GB PCIe", None),  # held "A100 80GB", the SXM part's old fragment
        ("A100-SXM4-80GB", "a100-sxm"),  # older drivers: no vendor word
        ("nvidia  h100_80gb-hbm3", "h100-sxm"),
    ],
)
def test_match_gpu_name(reported: str, expected: str | None) -> None:
    acc = catalog.match_gpu_name(reported)
    assert (acc.name if acc else None) == expected
