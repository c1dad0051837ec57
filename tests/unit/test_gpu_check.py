"""benchmarks/gpu_check.py where there is no GPU (CI, this machine): one line on stderr, exit 2,
nothing written. On a GPU machine it is run by hand (see its docstring)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_without_a_gpu_it_says_so_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a CUDA GPU is visible here: gpu_check would run for real")
    spec = importlib.util.spec_from_file_location("gpu_check", ROOT / "benchmarks" / "gpu_check.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main(["--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("gpu_check: needs a CUDA GPU") and "sees no CUDA GPU" in err[0]
    assert not (tmp_path / "out").exists()
    assert mod.OPS == tuple(__import__("netbench.collectives", fromlist=["OP_NAMES"]).OP_NAMES)
