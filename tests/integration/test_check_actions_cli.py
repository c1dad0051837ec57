"""`stoker check`'s actions as a process, at the argv level: the fake sinfo, scontrol and
kubectl of tests/harness/fake_scheduler.py log every call. Bad options are refused before
anything is measured or run; a dry run runs no scheduler command; an inventory-only pass
does not undo an io drain or taint; a hung sinfo stays under --limit; SIGTERM ends the
check's steps and temp dir (exit 3); the metrics file is 0644 under umask 077."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import STOKER
from tests.harness.fake_scheduler import FakeScheduler

# A hung tool, hand-written: nvidia-smi that never answers (a GPU in a bad state can do that).
HUNG = '#!/bin/sh\n# hand-written test double: a tool that hangs\necho $$ > "{pid}"\nexec sleep 300\n'
IO_TAINT = {"key": "stoker.dev/unhealthy", "value": "io.regression-node-storage", "effect": "NoSchedule"}


def check(
    fake: FakeScheduler, *argv: str, timeout: float = 120, **env: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*STOKER, "check", *argv], capture_output=True, text=True, timeout=timeout, env=fake.env(**env)
    )


def alive(pid: int) -> bool:
    try:
        return "\nState:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--node", "n[1-3]"], "--node 'n[1-3]' is not one plain node name"),
        (["--drain", "--node", "ALL"], "--node 'ALL' is the scheduler keyword"),
        # validated on the name scontrol gets, after shortening
        (["--drain", "--node", "ALL.cluster"], "--node 'ALL.cluster' shortens to 'ALL'"),
        (["--drain", "--node", "localhost.localdomain"], "shortens to 'localhost'"),
        (["--drain", "--node", "1.2.3.4x"], "shortens to '1', a number"),
        (["--k8s-node=--all"], "--k8s-node '--all' is not one plain node name"),
        (["--k8s-node", "a b"], "--k8s-node 'a b' is not one plain node name"),
        (["--limit", "inf"], "--limit inf: give at least"),
        (["--limit", "nan"], "--limit nan: give at least"),
        (["--limit", "1e308"], "--limit 1e+308: give at least"),
        (["--prometheus", "{tmp}"], "is a directory"),
        (["--prometheus", "{tmp}/no/such/stoker.prom"], "does not exist"),
        (["--prometheus", "/proc/stoker.prom"], "cannot write in /proc"),
        (["--prometheus", "{tmp}/theirs.prom"], "was not written by stoker"),
    ],
)
def test_bad_options_are_one_line_exit_2_before_anything_runs(
    tmp_path: Path, argv: list[str], says: str
) -> None:
    fake = FakeScheduler(tmp_path, slurm={"n1": ("idle", "none")})
    (tmp_path / "theirs.prom").write_text("# someone else's metrics\n")
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    t = time.monotonic()
    p = check(fake, "--checks", "inventory", "--drain", *argv, STOKER_HOSTNAME="n1")
    assert p.returncode == 2 and p.stdout == "", (p.stdout, p.stderr)
    (line,) = p.stderr.strip().splitlines()
    assert says in line, line
    assert fake.calls() == [] and time.monotonic() - t < 20
    assert (tmp_path / "theirs.prom").read_text() == "# someone else's metrics\n"


def test_an_odd_host_name_is_refused_up_front(tmp_path: Path) -> None:
    fake = FakeScheduler(tmp_path)
    env = {**fake.env()}
    envb = {k.encode(): v.encode() for k, v in env.items()}
    envb[b"STOKER_HOSTNAME"] = b"gpu\xff1"  # not UTF-8
    p = subprocess.run(
        [*STOKER, "check", "--checks", "inventory", "--drain"], capture_output=True, env=envb, timeout=60
    )
    assert p.returncode == 2 and p.stdout == b"", p
    (line,) = p.stderr.decode().strip().splitlines()
    assert "host name (set STOKER_HOSTNAME)" in line and fake.calls() == []


def test_dry_run_runs_no_scheduler_command_and_prints_what_it_would(tmp_path: Path) -> None:
    fake = FakeScheduler(tmp_path, slurm={"n1": ("drained", "stoker: [inventory] x")}, k8s={"n1": {}})
    p = check(
        fake,
        "--checks",
        "inventory",
        "--drain",
        "--k8s-node",
        "n1",
        "--dry-run",
        STOKER_HOSTNAME="n1.example.org",
    )
    assert p.returncode == 0, (p.stdout, p.stderr)
    assert fake.calls() == []
    assert p.stdout.splitlines() == [
        "would run: sinfo -h -N -n n1 -o '%N|%T|%E'",
        "would run, if sinfo answers for n1 alone, drained by stoker for checks all in [inventory]: "
        "scontrol update NodeName=n1 State=RESUME",
        "would run: kubectl get nodes n1 -o json",
        "would run, if n1 has stoker's taint naming only checks in [inventory]: "
        "kubectl taint nodes n1 stoker.dev/unhealthy:NoSchedule-",
        "would run, if n1 has stoker's taint naming only checks in [inventory]: "
        "kubectl label nodes n1 stoker.dev/health=pass --overwrite",
    ]
    assert fake.node("n1") == ("drained", "stoker: [inventory] x")


def test_an_inventory_pass_does_not_undo_an_io_drain_or_taint(tmp_path: Path) -> None:
    io_reason = "stoker: [io] baseline: checkpoint_write write on /x regression (1 < 10 GB/s)"
    fake = FakeScheduler(
        tmp_path,
        slurm={"n1": ("drained", io_reason)},
        k8s={"n1": {"taints": [IO_TAINT], "labels": {"stoker.dev/health": "fail"}}},
    )
    p = check(fake, "--checks", "inventory", "--drain", "--k8s-node", "n1", STOKER_HOSTNAME="n1.example.org")
    assert p.returncode == 0, (p.stdout, p.stderr)
    assert fake.calls() == [
        ["sinfo", "-h", "-N", "-n", "n1", "-o", "%N|%T|%E"],  # the short name
        ["kubectl", "get", "nodes", "n1", "-o", "json"],
    ]
    assert fake.node("n1") == ("drained", io_reason)
    assert fake.k8s_node("n1")["taints"] == [IO_TAINT]
    assert "n1 drained by stoker for [io]; only [inventory] ran and passed here: left drained" in p.stdout


def test_a_pass_resumes_and_untaints_what_its_own_checks_found(tmp_path: Path) -> None:
    taint = {**IO_TAINT, "value": "inventory.gpu-errors"}
    fake = FakeScheduler(
        tmp_path,
        slurm={"n1": ("drained", "stoker: [inventory] gpu errors GPU3 below_spec")},
        k8s={"n1": {"taints": [taint], "labels": {"stoker.dev/health": "fail"}}},
    )
    p = check(fake, "--checks", "inventory", "--drain", "--k8s-node", "n1", STOKER_HOSTNAME="n1")
    assert p.returncode == 0, (p.stdout, p.stderr)
    assert fake.calls()[1] == ["scontrol", "update", "NodeName=n1", "State=RESUME"]
    assert fake.calls()[3:] == [
        ["kubectl", "taint", "nodes", "n1", "stoker.dev/unhealthy:NoSchedule-"],
        ["kubectl", "label", "nodes", "n1", "stoker.dev/health=pass", "--overwrite"],
    ]
    assert "stoker check: running: scontrol update NodeName=n1 State=RESUME" in p.stdout  # said as taken
    assert fake.node("n1") == ("idle", "none") and fake.k8s_node("n1")["taints"] == []


def test_a_hung_sinfo_cannot_overrun_the_limit(tmp_path: Path) -> None:
    fake = FakeScheduler(tmp_path, slurm={"n1": ("drained", "stoker: [inventory] x")}, hang=("sinfo",))
    t = time.monotonic()
    p = check(fake, "--checks", "inventory", "--limit", "14", "--drain", STOKER_HOSTNAME="n1")
    wall = time.monotonic() - t
    assert wall < 14 + 3, wall  # the limit, and the interpreter's own start
    assert p.returncode == 4, (p.stdout, p.stderr)  # a passing check whose action failed
    assert "`sinfo -h -N -n n1 -o '%N|%T|%E'` did not answer" in p.stderr
    assert not alive(int((tmp_path / "sinfo.pid").read_text()))


def test_a_check_whose_step_hung_queries_and_changes_nothing(tmp_path: Path) -> None:
    """The inventory step hangs (nvidia-smi never answers) and is stopped at its share of the
    limit: the check is incomplete (exit 3) and no sinfo, scontrol or kubectl runs, so a drain
    stoker made is not resumed and no `health=pass` label is set on a tool that proved nothing."""
    fake = FakeScheduler(tmp_path, slurm={"n1": ("drained", "stoker: [inventory] x")}, k8s={"n1": {}})
    (fake.bin / "nvidia-smi").write_text(HUNG.format(pid=tmp_path / "smi.pid"))
    (fake.bin / "nvidia-smi").chmod(0o755)
    p = check(
        fake, "--checks", "inventory", "--limit", "14", "--drain", "--k8s-node", "n1", STOKER_HOSTNAME="n1"
    )
    assert p.returncode == 3, (p.stdout, p.stderr)
    assert fake.calls() == []
    assert fake.node("n1") == ("drained", "stoker: [inventory] x")


def test_sigterm_stops_the_steps_removes_the_temp_dir_and_exits_3(tmp_path: Path) -> None:
    fake = FakeScheduler(tmp_path, slurm={"n1": ("idle", "none")})
    (fake.bin / "nvidia-smi").write_text(HUNG.format(pid=tmp_path / "smi.pid"))
    (fake.bin / "nvidia-smi").chmod(0o755)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = subprocess.Popen(
        [*STOKER, "check", "--checks", "inventory", "--limit", "60", "--drain"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=fake.env(STOKER_HOSTNAME="n1", TMPDIR=str(tmp)),
    )
    deadline = time.monotonic() + 40
    while not (tmp_path / "smi.pid").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    smi = int((tmp_path / "smi.pid").read_text())
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 3, (out, err)
    assert "stoker check: interrupted" in err
    assert not alive(smi)
    assert list(tmp.iterdir()) == []  # the check's temp dir is gone
    assert fake.calls() == []  # nothing drained or resumed on an interrupted check


def test_metrics_file_is_0644_under_umask_077(tmp_path: Path) -> None:
    fake = FakeScheduler(tmp_path)
    prom = tmp_path / "stoker.prom"
    p = subprocess.run(
        [*STOKER, "check", "--checks", "inventory", "--prometheus", str(prom)],
        capture_output=True,
        text=True,
        timeout=120,
        env=fake.env(STOKER_HOSTNAME="n1"),
        preexec_fn=lambda: os.umask(0o077),
    )
    assert p.returncode == 0, (p.stdout, p.stderr)
    assert stat.S_IMODE(prom.stat().st_mode) == 0o644
    assert "stoker_check_last_run_timestamp_seconds" in prom.read_text()


def test_an_older_stokers_metrics_file_says_to_move_or_delete_it_once(tmp_path: Path) -> None:
    """After an upgrade the metrics file a stoker from before the ledger wrote is in no ledger:
    refused (never written over), with the one thing to do; done once, the check writes it."""
    fake = FakeScheduler(tmp_path)
    prom = tmp_path / "stoker.prom"
    old = (  # hand-written in the textfile collector's format, as an older stoker left it
        "# HELP stoker_check_pass 1 when the last check passed\n"
        "# TYPE stoker_check_pass gauge\n"
        'stoker_check_pass{host="n1"} 1.0\n'
    )
    prom.write_text(old)
    p = check(fake, "--checks", "inventory", "--prometheus", str(prom), STOKER_HOSTNAME="n1")
    assert p.returncode == 2 and prom.read_text() == old
    assert p.stderr.count("\n") == 1 and "move or delete it once" in p.stderr
    assert f"`rm {prom}`" in p.stderr and str(tmp_path / ".stoker-outputs") in p.stderr
    prom.unlink()  # what the line says, once
    p = check(fake, "--checks", "inventory", "--prometheus", str(prom), STOKER_HOSTNAME="n1")
    assert p.returncode == 0, (p.stdout, p.stderr)
    assert "stoker_check_last_run_timestamp_seconds" in prom.read_text()


def test_without_path_the_check_measures_where_the_baseline_accepted_this_nodes_disk(tmp_path: Path) -> None:
    """A baseline of n1's local disk on DIR/scratch (figures hand-made with 1 writer and worker,
    accepted at 0.001 GB/s so any disk passes): `check --checks io --baseline` without --path
    measures there, not in /var/tmp, and -v says so in one line; a path the baseline accepted
    that this node lacks is refused, naming where it came from."""
    from reports.judging.fleet.baseline import Figure, make
    from reports.judging.fleet.baseline_file import to_yaml

    fake = FakeScheduler(tmp_path)
    scratch = tmp_path / "scratch"
    figs = [
        Figure(
            kind="node-storage", component="node", what=f"{wl} {d} on {scratch}", value=0.001,
            scope="local", path=str(scratch), workload=wl, direction=d, host="n1", hosts=("n1",),
            backend="fio", procs=1,
        )
        for wl, d in (("checkpoint_write", "write"), ("checkpoint_read", "read"), ("dataloader_read", "read"))
    ]  # fmt: skip
    base = tmp_path / "b.yaml"
    base.write_text(to_yaml(make("acc-1", "t", figs)))
    said = f"--path {scratch}: the local path the baseline {base} accepted for n1"
    p = check(fake, "--checks", "io", "--baseline", str(base), STOKER_HOSTNAME="n1")
    assert p.returncode == 2 and p.stderr.count("\n") == 1
    assert f"--path {scratch}: no such directory ({said})" in p.stderr
    scratch.mkdir()
    out = tmp_path / "kept"
    p = check(fake, "--checks", "io", "--baseline", str(base), "--out", str(out), "-v", STOKER_HOSTNAME="n1")
    assert p.returncode == 0, (p.stdout, p.stderr)
    assert p.stdout.splitlines()[0] == f"stoker check: {said}"
    from reports.table.read import read_records

    assert {r.path for r in read_records(out).io} == {str(scratch)}
