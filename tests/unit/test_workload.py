"""The workload loader: presets, overrides, and errors naming file and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from reports.judging.workload.workload import DDP_BUCKET_BYTES, load_workload
from reports.shared.errors import UsageError
from tests.conftest import REPO


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "workload.yaml"
    p.write_text(text)
    return p


def test_contract_example() -> None:
    w = load_workload(REPO / "examples" / "workload-llama70b.yaml")
    # the file is the preset: the catalog's 70.6e9 (Llama 3 paper), nothing overridden
    assert (w.name, w.params, w.gpus, w.data, w.tensor) == ("llama-70b", 70.6e9, 512, "fsdp", 8)
    assert (w.global_batch_tokens, w.mfu, w.idle_budget) == (4.0e6, 0.40, 0.05)
    assert (w.layers, w.hidden) == (80, 8192)  # from the preset
    assert w.dataloader is not None and w.dataloader.bytes_per_token == 4
    assert w.checkpoint is not None and (
        w.checkpoint.interval_minutes,
        w.checkpoint.bytes_per_param,
        w.checkpoint.async_,
    ) == (60, 14, False)


def test_the_example_file_and_the_preset_are_one_job() -> None:
    """examples/workload-llama70b.yaml and `--workload llama-70b` price the same job the same:
    every field of the model is equal (the file only names where it came from)."""
    import dataclasses

    from reports.judging.workload.model import Measured, starvation
    from reports.shared.spec import load_spec

    f = load_workload(REPO / "examples" / "workload-llama70b.yaml")
    p = load_workload("llama-70b")
    assert dataclasses.replace(f, file="", notes=()) == dataclasses.replace(p, file="", notes=())
    spec = load_spec(REPO / "examples" / "spec-h100.yaml")
    # compute by hand: 6 x 70.6e9 x 4e6 / (512 x 989e12 x 0.40) = 8.3655 s for both
    for w in (f, p):
        assert starvation(w, spec, Measured())[1]["compute_s"] == pytest.approx(8.3655, abs=5e-4)


@pytest.mark.parametrize("name", ["llama-8b", "llama-70b", "llama-405b", "LLAMA_405B"])
def test_model_presets_by_name(name: str) -> None:
    w = load_workload(name)
    assert w.is_training and w.params and w.layers and w.hidden


def test_dataloader_presets_by_name() -> None:
    u = load_workload("unet3d")
    assert u.name == "unet3d" and not u.is_training
    assert u.dataloader is not None
    assert (u.dataloader.bytes_per_sample, u.dataloader.batch, u.dataloader.compute_s["h100"]) == (
        146.6e6,
        7,
        0.323,
    )
    r = load_workload("resnet50").dataloader
    assert r is not None and r.bytes_per_sample == 114660 and r.batch == 400
    c = load_workload("cosmoflow").dataloader
    assert c is not None and c.compute_s == {"a100": 0.00551, "h100": 0.00350}


def test_overrides_merge_one_level(tmp_path: Path) -> None:
    w = load_workload(
        write(
            tmp_path,
            "preset: llama-8b\ngpus: 16\nparallelism: {data: ddp}\n"
            "checkpoint: {async: true}\ndataloader: {bytes_per_sample: 1000, samples_per_s_per_gpu: 5}\n",
        )
    )
    assert (w.gpus, w.data, w.tensor) == (16, "ddp", 1)
    assert w.checkpoint is not None and w.checkpoint.async_ and w.checkpoint.interval_minutes == 60
    assert w.dataloader is not None and w.dataloader.samples_per_s_per_gpu == 5.0
    assert w.bucket_bytes == DDP_BUCKET_BYTES


def test_custom_model_without_layers_estimates_hidden(tmp_path: Path) -> None:
    w = load_workload(write(tmp_path, "params: 12e9\ngpus: 8\nglobal_batch_tokens: 1e6\n"))
    assert w.n_layers == 32
    assert w.d_model == 5590  # sqrt(12e9 / (12 x 32)) = 5590.17


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "preset: llama-7b",
            r"workload.yaml: preset: unknown model preset 'llama-7b': did you mean llama-70b or llama-8b",
        ),
        ("preset: llama-8b\ngpus: many", r"workload.yaml: gpus: expected a positive integer, got 'many'"),
        (
            "preset: llama-8b\nmfu: 1.5",
            r"workload.yaml: mfu: expected a positive number no larger than 1, got 1.5",
        ),
        (
            "preset: llama-8b\nparallelism: {data: zero3}",
            r"workload.yaml: parallelism.data: expected one of ddp, fsdp, got 'zero3'",
        ),
        (
            "preset: llama-8b\ngpus: 60\nparallelism: {tensor: 8}",
            r"workload.yaml: parallelism.tensor: expected a divisor of gpus \(60\), got 8",
        ),
        (
            "preset: llama-8b\ncheckpoint: {async: maybe}",
            r"workload.yaml: checkpoint.async: expected true or false, got 'maybe'",
        ),
        (
            "dataloader: {preset: imagenet}",
            r"workload.yaml: dataloader.preset: unknown dataloader preset 'imagenet'",
        ),
        (
            "dataloader: {bytes_per_sample: 100}",
            r"workload.yaml: dataloader: expected a preset, bytes_per_token, or bytes_per_sample with samples_per_s_per_gpu",
        ),
        ("mfu: 0.5", r"workload.yaml: top level: expected a preset, params"),
        ("prams: 7e9", r"workload.yaml: prams: unknown field \(did you mean params\?\)"),
    ],
)
def test_errors_name_file_field_and_expectation(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        load_workload(write(tmp_path, text))


def test_unknown_preset_name() -> None:
    with pytest.raises(
        UsageError, match=r"workload 'lama-70b' is neither a file nor a preset: did you mean llama-70b"
    ):
        load_workload("lama-70b")


def test_compute_s_from_a_file(tmp_path: Path) -> None:
    w = load_workload(write(tmp_path, "params: 6.3e6\ngpus: 2\nparallelism: {data: ddp}\ncompute_s: 0.726\n"))
    assert w.compute_s == 0.726 and w.is_training and w.global_batch_tokens is None
    with pytest.raises(UsageError, match="compute_s"):
        load_workload(write(tmp_path, "params: 6.3e6\ngpus: 2\ncompute_s: fast\n"))
