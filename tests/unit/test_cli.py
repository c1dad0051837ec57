import subprocess
from pathlib import Path

import pytest

from tests.conftest import STOKER


def test_help_lists_every_command() -> None:
    out = subprocess.run([*STOKER, "--help"], capture_output=True, text=True, check=True).stdout
    for cmd in ("run", "net", "io", "report", "submit", "compare", "import"):
        assert cmd in out


def test_unknown_option_is_one_line_exit_2() -> None:
    p = subprocess.run([*STOKER, "net", "--no-such-flag"], capture_output=True, text=True)
    assert p.returncode == 2
    assert len(p.stderr.strip().splitlines()) == 1


def test_run_and_submit_take_a_workload_preset_name(tmp_path: Path) -> None:
    """`stoker run --workload llama-70b` takes the preset name, as report and compare do."""
    from launchers.options import checked_workload, keep_inputs
    from reports.judging.workload.workload import load_workload
    from reports.shared.errors import UsageError

    assert checked_workload("llama-70b", tmp_path) == "llama-70b"
    assert checked_workload("unet3d", tmp_path) == "unet3d"
    with pytest.raises(UsageError, match="neither a file nor a preset"):
        checked_workload("llama-71b", tmp_path)
    (tmp_path / "w.yaml").write_text("preset: llama-8b\n")
    assert checked_workload("w.yaml", tmp_path) == str(tmp_path / "w.yaml")
    for name in ("llama-70b", "unet3d"):
        keep_inputs(tmp_path, None, name)
        assert load_workload(tmp_path / "workload.yaml").name == name
