"""Bad input never runs a line, never leaks a secret, never reads as a verdict: run ids,
the environment allowlist, and what an unexpected exception exits with."""

from __future__ import annotations

from pathlib import Path

import pytest

from launchers import cli
from reports.shared.errors import UsageError
from reports.shared.manifest import allowlisted_env
from reports.shared.records import check_run_id, new_run_id


@pytest.mark.parametrize("bad", ["a/../../escape", "..", ".", "a b", "x\ny", "a;rm", "é", "x" * 129, "$(id)"])
def test_bad_run_ids_are_refused(bad: str) -> None:
    with pytest.raises(UsageError, match="STOKER_RUN_ID"):
        new_run_id({"STOKER_RUN_ID": bad})


@pytest.mark.parametrize("good", ["slurm-1234", "20261123T055300Z-ab12cd", "a.b_c-D", "import-0123456789ab"])
def test_good_run_ids_pass_unchanged(good: str) -> None:
    assert new_run_id({"STOKER_RUN_ID": good}) == good == check_run_id(good)


def test_made_run_id_is_valid() -> None:
    assert check_run_id(new_run_id({}))


def test_stoker_io_with_escaping_run_id_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("STOKER_RUN_ID", "a/../../escape")
    monkeypatch.chdir(tmp_path)
    rc = cli.main(["io", "--path", str(tmp_path), "--workloads", "metadata", "--runtime", "2"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "STOKER_RUN_ID" in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []  # nothing created anywhere


def test_secret_looking_names_are_redacted() -> None:
    env = {
        "NCCL_IB_PASS": "p1",
        "UCX_PWD": "p2",
        "FI_CXI_TOKEN": "p3",
        "OMPI_MCA_SECRET": "p4",
        "NCCL_API_KEY": "p5",
        "FI_CREDENTIALS": "p6",
        "NCCL_DEBUG": "INFO",
        "HOME": "/root",
    }
    got = allowlisted_env(env)
    assert got == {
        "FI_CREDENTIALS": "<redacted>",
        "FI_CXI_TOKEN": "<redacted>",
        "NCCL_API_KEY": "<redacted>",
        "NCCL_DEBUG": "INFO",
        "NCCL_IB_PASS": "<redacted>",
        "OMPI_MCA_SECRET": "<redacted>",
        "UCX_PWD": "<redacted>",
    }
    assert not {"p1", "p2", "p3", "p4", "p5", "p6"} & set(got.values())


def test_unexpected_exception_exits_70_with_one_line_and_a_traceback_file(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import reports.fleet.cmd as compare

    def boom(args: object) -> int:
        raise ZeroDivisionError("float division by zero")

    monkeypatch.setattr(compare, "main", boom)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    rc = cli.main(["compare", "a", "b"])
    err = capsys.readouterr().err
    assert rc == cli.CRASHED == 70
    assert err.count("\n") == 1 and "ZeroDivisionError: float division by zero" in err
    crash = list(tmp_path.glob("stoker-compare-crash-*.txt"))
    assert len(crash) == 1 and str(crash[0]) in err
    text = crash[0].read_text()
    assert text.startswith("Traceback") and "boom" in text
