"""How many processes save a checkpoint at once on a node (iobench.torch_ckpt.node_writers):
one per GPU the NVIDIA driver lists, else the run's --writers."""

from __future__ import annotations

from pathlib import Path

from iobench.torch_ckpt import node_writers


def test_one_saving_process_per_gpu(tmp_path: Path) -> None:
    gpus = tmp_path / "gpus"  # /proc/driver/nvidia/gpus holds one directory per GPU, named by PCI address
    gpus.mkdir()
    for i in range(8):
        (gpus / f"0000:{i:02x}:00.0").mkdir()
    assert node_writers(2, gpus) == 8


def test_without_gpus_the_writers_option_counts(tmp_path: Path) -> None:
    assert node_writers(2, tmp_path / "absent") == 2  # no NVIDIA driver: --writers (default 2..8 per core)
    empty = tmp_path / "gpus"
    empty.mkdir()
    assert node_writers(3, empty) == 3
    assert node_writers(0, empty) == 1
