"""The compute sweep's GPU grid reaches where mamf-finder's published table found each
accelerator's maximum: every profile measures those shapes, first, and every catalog accelerator
with a `mamf` figure has its shape there (so a new catalog row cannot go without one)."""

from __future__ import annotations

from pathlib import Path

import yaml

from netbench.compute import sweep as sw

CATALOG = Path(__file__).resolve().parents[2] / "reports" / "judging" / "catalog" / "accelerators.yaml"
# copied by hand from ml-engineering compute/accelerator/README.md, "Maximum Achievable Matmul
# FLOPS comparison table" (Best Shape MxNxK column), for the rows the catalog quotes
TABLE = {
    ("h100-sxm", "bf16"): (2048, 2048, 13312),  # 794.5 TFLOPS
    ("b200", "bf16"): (1792, 16128, 3072),  # 1745.0
    ("mi300x", "bf16"): (10240, 15360, 8192),  # 668.4
    ("gaudi2", "bf16"): (14336, 15360, 2048),  # 418.7
    ("h100-sxm", "fp8"): (1024, 9216, 14336),  # 1402.6
}


def test_every_catalog_mamf_figure_has_its_best_shape() -> None:
    acc = yaml.safe_load(CATALOG.read_text())["accelerators"]
    with_mamf = {name: set(e["mamf"]) for name, e in acc.items() if e.get("mamf")}
    assert {name: set(d) for name, d in sw.MAMF_SHAPES.items()} == with_mamf
    for (name, dtype), shape in TABLE.items():
        assert sw.MAMF_SHAPES[name][dtype] == shape  # type: ignore[index]


def test_every_gpu_profile_measures_the_table_shapes_first() -> None:
    # 10 entries, 9 shapes: the H200's bf16 row is the H100's shape
    named = {s for d in sw.MAMF_SHAPES.values() for s in d.values()}
    assert len(named) == 9
    for profile in ("quick", "standard", "full"):
        grid = sw.plan(profile, ("bf16", "fp8"), gpu=True).grid
        assert set(grid[:9]) == named, profile
        assert grid[0] == (10240, 15360, 8192)  # the largest product: 1.29e12 multiply-adds
        assert len(grid) == len(set(grid)) == 9 + len(sw.GPU_SIZES[profile]) ** 3
        assert max(max(s) for s in grid) >= 16128  # B200's bf16 N: past the standard cube's 12288
        assert set(TABLE.values()) <= set(grid)


def test_a_cpu_grid_is_its_cube_alone() -> None:
    grid = sw.plan("quick", ("fp32",), gpu=False).grid
    assert grid == tuple(sw.shapes((1024, 2048)))  # 8 shapes, 2048^3 first
    assert (2048, 2048, 13312) not in grid
