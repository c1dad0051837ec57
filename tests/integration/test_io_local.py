"""Real fio on a temp dir: every workload, small sizes; sane records; nothing left behind."""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from reports.table.read import read_records
from tests.conftest import REPO, STOKER, ctrl_c_default, needs_tool

pytestmark = needs_tool("fio")

SMALL = [
    "--ckpt-bytes",
    "16M",
    "--ckpt-block",
    "1M",
    "--writers",
    "2",
    "--runtime",
    "2",
    "--workers",
    "2",
    "--files-per-worker",
    "8",
    "--file-bytes",
    "1M",
    "--md-files",
    "200",
    "--storm-procs",
    "3",
    "--storm-files",
    "100",
]


def stoker(
    *argv: str, env: dict[str, str] | None = None, timeout: float = 240
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*STOKER, *argv], capture_output=True, text=True, cwd=REPO, env=env, timeout=timeout
    )


def test_all_workloads_on_a_temp_dir(tmp_path: Path) -> None:
    work, out = tmp_path / "scratch", tmp_path / "out"
    work.mkdir()
    (work / "precious.txt").write_text("not stoker's")
    p = stoker(
        "io",
        "--path",
        str(work),
        "--out",
        str(out),
        *SMALL,
        env={"STOKER_RUN_ID": "io-local-test", "PATH": "/usr/bin:/bin"},
    )
    assert p.returncode == 0, p.stderr
    recs = read_records(out)
    assert not recs.skipped
    by = {(r.workload, r.backend, r.extra.get("op", "")): r for r in recs.io}
    assert set(by) == {
        ("checkpoint_write", "fio", ""),
        ("checkpoint_write", "torch.save", ""),
        ("checkpoint_write", "torch.dcp", ""),
        ("checkpoint_read", "fio", ""),
        ("dataloader_read", "fio", ""),
        ("metadata", "fio", "create"),
        ("metadata", "fio", "stat"),
        ("metadata", "fio", "delete"),
        ("metadata", "fio", "import_storm"),
    }
    for r in recs.io:
        assert r.run_id == "io-local-test" and r.path == str(work) and r.scope == "local"
        assert r.failed == "" and r.iops > 0 and r.runtime_s > 0
        assert r.nodes == 1 and r.extra["procs_per_node"] == r.procs  # one node: all its processes
        if r.bytes:
            assert r.bw_GBps == pytest.approx(r.bytes / r.runtime_s / 1e9, rel=1e-3)
        if r.lat_ms:
            assert r.lat_ms["p99"] >= r.lat_ms["p50"] > 0
    # fio jobs are time_based (steady window after the ramp): each of the 2 writers loops over
    # its 16 MiB file in whole 1 MiB blocks, so the window moves a whole number of blocks
    for wl in ("checkpoint_write", "checkpoint_read"):
        moved = by[(wl, "fio", "")].bytes
        assert moved > 0 and moved % (1 << 20) == 0, (wl, moved)
    # each save kind twice, each figure the median of 3 saves: one process (one writer's shard), then --writers (2) processes at once
    # on a node without GPUs, each its own shard
    saves = {(r.backend, r.procs): r for r in recs.io if r.backend in ("torch.save", "torch.dcp")}
    assert set(saves) == {("torch.save", 1), ("torch.save", 2), ("torch.dcp", 1), ("torch.dcp", 2)}
    fio_write = by[("checkpoint_write", "fio", "")]
    for (_, procs), r in saves.items():
        # 3 repeats, each a save of 8 MiB (half the shard) then of the whole 16 MiB per process;
        # the record is the median whole save's
        assert r.bytes == procs * (16 << 20) and r.extra["writers_per_node"] == procs
        assert r.extra["shard_bytes"] == 16 << 20 and r.extra["small_shard_bytes"] == 8 << 20
        assert r.extra["repeats"] == 3 and len(r.extra["samples_GBps"]) == 3
        assert r.extra["min_GBps"] <= r.bw_GBps <= r.extra["max_GBps"]
        assert sorted(r.extra["samples_GBps"])[1] == r.bw_GBps
        # the rate past the half: a GB/s (or null when the larger saves took no longer), and the
        # figure over it; a small save's rate is a GB/s
        sus = r.extra["sustained_GBps"]
        assert sus is None or sus > 0, sus
        assert set(r.extra["per_host_sustained_GBps"]) == set(r.per_host_bw_GBps)
        if sus is not None:
            assert r.extra["nonlinearity"] == pytest.approx(r.bw_GBps / sus, rel=1e-3)
        assert r.extra["small_GBps"] > 0
        # held to fio's sequential write on the same path, host by host
        assert r.extra["fio_per_host_GBps"] == fio_write.per_host_bw_GBps
        assert r.extra["cache_absorbed"] is any(
            v > 1.10 * fio_write.per_host_bw_GBps[h] for h, v in r.per_host_bw_GBps.items()
        )
    assert by[("checkpoint_write", "fio", "")].direct is True  # ext4 takes O_DIRECT
    dl = by[("dataloader_read", "fio", "")]
    assert dl.extra["samples_per_s"] == pytest.approx(dl.iops) and dl.block_size == 128 << 10
    storm = by[("metadata", "fio", "import_storm")]
    assert storm.bytes == 3 * 100 * 4096 and storm.procs == 3
    assert by[("metadata", "fio", "create")].bytes == 0
    # the work dir is gone and nothing else was touched
    assert sorted(x.name for x in work.iterdir()) == ["precious.txt"]
    (manifest,) = recs.manifests
    assert manifest["fio"].startswith("fio-") and manifest["paths"][str(work)]["fstype"]
    assert "checkpoint_write" in p.stdout and "GB/s" in p.stdout


def test_dry_run_prints_runnable_fio_lines(tmp_path: Path) -> None:
    p = stoker("io", "--path", str(tmp_path), "--dry-run", "--workloads", "checkpoint")
    assert p.returncode == 0
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("fio ")]
    assert len(lines) == 2 and "--rw=write" in lines[0] and "--output-format=json" in lines[0]
    assert list(tmp_path.iterdir()) == []  # a dry run writes nothing


def one_line_error(p: subprocess.CompletedProcess[str], code: int, text: str) -> None:
    assert p.returncode == code, (p.stdout, p.stderr)
    err = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(err) == 1 and text in err[0], p.stderr


def test_bad_paths(tmp_path: Path) -> None:
    one_line_error(stoker("io", "--path", str(tmp_path / "nope")), 2, "does not exist")
    f = tmp_path / "file"
    f.write_text("x")
    one_line_error(stoker("io", "--path", str(f)), 2, "is not a directory")
    one_line_error(stoker("io", "--path", "/tmp/a:b"), 2, "contains ':'")


def test_too_big_is_refused(tmp_path: Path) -> None:
    p = stoker(
        "io",
        "--path",
        str(tmp_path),
        "--out",
        str(tmp_path / "o"),
        "--workloads",
        "checkpoint",
        "--ckpt-bytes",
        "900T",
    )
    one_line_error(p, 2, "stoker uses at most half")
    assert [x.name for x in tmp_path.iterdir() if x.name.startswith(".stoker-")] == []  # no work dir left


def test_fio_missing(tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    p = stoker("io", "--path", str(tmp_path), env={"PATH": str(empty)})
    one_line_error(p, 2, "apt-get install fio")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_removes_the_work_dir(tmp_path: Path, sig: signal.Signals) -> None:
    work = tmp_path / "w"
    work.mkdir()
    p = subprocess.Popen(
        [
            *STOKER,
            "io",
            "--path",
            str(work),
            "--out",
            str(tmp_path / "o"),
            "--workloads",
            "dataloader",
            "--runtime",
            "60",
            "--workers",
            "1",
            "--files-per-worker",
            "4",
            "--file-bytes",
            "1M",
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=ctrl_c_default,
    )
    deadline = time.monotonic() + 60
    # wait until fio is reading its files, then stop stoker as Ctrl-C / a scheduler would
    while not list(work.glob(".stoker-*/*/dl.*")) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert list(work.glob(".stoker-*/*/dl.*")), "fio never laid out its files"
    time.sleep(0.5)
    p.send_signal(sig)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 3, err
    assert "interrupted" in err
    assert list(work.iterdir()) == []
    # no fio job process outlives stoker (fio forks one per job)
    time.sleep(0.5)
    left = [c for c in Path("/proc").glob("[0-9]*/cmdline") if _reads(c).find(str(work)) >= 0]
    assert left == []


def _reads(p: Path) -> str:
    try:
        return p.read_bytes().decode(errors="replace")
    except OSError:  # the process ended while we looked
        return ""


def test_a_fio_error_other_than_a_full_disk_aborts_with_fios_reason() -> None:
    """fio writes its JSON with a non-zero job `error` (here EPERM: /proc/version cannot be
    written, even by root) and exits 1: a MeasurementAborted naming it, not a DiskFull."""
    from iobench.runner import DiskFull, run_job
    from iobench.workloads import FioJob
    from reports.shared.errors import MeasurementAborted

    job = FioJob(
        name="checkpoint_write",
        workload="checkpoint_write",
        options=(("filename", "/proc/version"), ("rw", "write"), ("bs", "4096"), ("size", "4096")),
    )
    with pytest.raises(MeasurementAborted) as info:
        run_job(shutil.which("fio") or "fio", job, "n1", timeout_s=60)
    assert not isinstance(info.value, DiskFull)
    assert "fio checkpoint_write failed (exit 1, error 1)" in str(
        info.value
    ) and "Operation not permitted" in str(info.value)
