"""A soak under SIGTERM/SIGINT and vanishing hardware, fast: a fake phase (a few lines of
Python that act as a soak's network phase or the report) run by `run_phase` while the test
process holds StopSignals and signals itself; the counter records of a port or GPU that is
gone after a pass, and the finding the judge makes of them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from launchers.local.phases import Phase, StopSignals, run_phase
from netbench.soak import counter_records
from reports.judging.fleet.stability import stability
from tests.conftest import STOKER

# A fake network phase: on SIGTERM it finishes the pass in flight (1 s) and says so.
FAKE_PASS = """
import signal, sys, time
asked = []
signal.signal(signal.SIGTERM, lambda *a: asked.append(1))
print("pass 1 started", flush=True)
t = time.monotonic()
while not asked and time.monotonic() - t < 30:
    time.sleep(0.02)
time.sleep(1.0)
print("pass 1 finished", flush=True)
"""
# A fake report: takes 1.5 s, knows nothing of signals (TERM would kill it).
FAKE_REPORT = "import time; time.sleep(1.5); print('report written', flush=True)"


def _phase(code: str, on_stop: str) -> Phase:
    return Phase(name="fake", argv=(sys.executable, "-c", code), limit_s=60, on_stop=on_stop)  # type: ignore[arg-type]


def _signal_me(sig: signal.Signals, *after_s: float, once: Path | None = None) -> None:
    """Signal this process at each of `after_s`, counted from when `once` shows "pass 1
    started" (the fake phase's handler is in place), else from now."""

    def go() -> None:
        deadline = time.monotonic() + 30
        while once is not None and "pass 1 started" not in once.read_text() and time.monotonic() < deadline:
            time.sleep(0.02)
        t0 = time.monotonic()
        for t in after_s:
            time.sleep(max(0.0, t0 + t - time.monotonic()))
            os.kill(os.getpid(), sig)

    threading.Thread(target=go, daemon=True).start()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=lambda s: s.name)
def test_a_stop_lets_the_network_pass_in_flight_finish(sig: signal.Signals, tmp_path: Path) -> None:
    log = tmp_path / "log"
    with StopSignals() as stop, open(log, "w") as sink:
        _signal_me(sig, 0.5, once=log)
        r = run_phase(_phase(FAKE_PASS, "tell"), 1, 0, dict(os.environ), sink=sink, stop=stop)
    text = log.read_text()
    # the child heard TERM, finished its pass (1 s after the signal at 0.5 s) and ended cleanly
    assert r.rc == 0 and r.interrupted and "pass 1 finished" in text, text
    assert r.elapsed_s >= 1.5, r.elapsed_s  # the real time (0.5 s, then the 1 s pass), never 0.0
    assert stop.count == 1 and stop.name == sig.name
    assert f"{sig.name} asked; it finishes the pass in flight" in text


def test_a_second_stop_ends_the_pass_at_once(tmp_path: Path) -> None:
    with StopSignals() as stop, open(tmp_path / "log", "w") as sink:
        _signal_me(signal.SIGINT, 0.2, 0.5, once=tmp_path / "log")
        r = run_phase(_phase(FAKE_PASS, "tell"), 1, 0, dict(os.environ), sink=sink, stop=stop)
    assert (
        r.rc == -signal.SIGKILL and r.interrupted and "pass 1 finished" not in (tmp_path / "log").read_text()
    )


def test_the_report_finishes_under_a_stop_and_ends_at_a_second(tmp_path: Path) -> None:
    with StopSignals() as stop, open(tmp_path / "log", "w") as sink:
        _signal_me(signal.SIGTERM, 0.3)
        r = run_phase(_phase(FAKE_REPORT, "wait"), 1, 0, dict(os.environ), sink=sink, stop=stop)
    assert r.rc == 0 and r.interrupted and "report written" in (tmp_path / "log").read_text()
    with StopSignals() as stop, open(tmp_path / "log2", "w") as sink:
        _signal_me(signal.SIGTERM, 0.3, 0.5)
        r = run_phase(_phase(FAKE_REPORT, "wait"), 1, 0, dict(os.environ), sink=sink, stop=stop)
    assert r.rc == -signal.SIGTERM and "report written" not in (tmp_path / "log2").read_text()


def test_stoker_net_soak_finishes_the_pass_in_flight_on_a_signal(tmp_path: Path) -> None:
    """Real gloo ranks under `stoker net --nproc 2`, the whole process group sent SIGTERM (as
    `stoker soak` and scancel do; a terminal's Ctrl-C is SIGINT, the same handler) in the
    middle of a pass. ~15 s on 2 cores, most of it the ranks' start-up."""
    sig = signal.SIGTERM
    out, log = tmp_path / "r", tmp_path / "log"
    argv = [*STOKER, "net", "--nproc", "2", "--backend", "gloo", "--ops", "all_reduce", "--scopes", "world"]
    argv += [
        "--min-bytes",
        "1M",
        "--max-bytes",
        "4M",
        "--iters",
        "150",
        "--soak-passes",
        "500",
        "--out",
        str(out),
    ]
    with open(log, "w") as fh:
        p = subprocess.Popen(argv, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 120
        while "soak pass 2:" not in log.read_text() and time.monotonic() < deadline and p.poll() is None:
            time.sleep(0.05)
        time.sleep(0.2)  # into pass 3
        os.killpg(p.pid, sig)
        rc = p.wait(timeout=120)
    text = log.read_text()
    per_pass = Counter(json.loads(ln)["soak_pass"] for ln in (out / "net.jsonl").read_text().splitlines())
    last = max(per_pass)
    # every kept pass is whole: 1M, 2M and 4M (step factor 2) for all_reduce, as pass 1 has
    assert set(per_pass.values()) == {3} and last >= 3, per_pass
    assert f"soak pass {last}:" in text and f"stopped by {sig.name}" in text, text[-2000:]
    assert rc == 0, (rc, text[-2000:])


def test_signals_are_restored_after_the_soak() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with StopSignals():
        assert signal.getsignal(signal.SIGTERM) is not before
    assert signal.getsignal(signal.SIGTERM) is before


# -- a port or GPU that vanishes between passes --------------------------------------------
BEFORE = {
    "node1": {
        "eth1": {"rx_errors": 0.0},
        "mlx5_0:1": {"symbol_error": 3.0},
        "gpu2": {"ecc_uncorrected": 0.0},
        "gpu@0000:3b:00.0": {"xid": 1.0, "xid_hardware": 0.0},  # kernel-log tallies, not a device read
        "veth9a1b": {"rx_errors": 0.0},  # a container's interface
    },
    "node2": {"eth1": {"rx_errors": 0.0}},
}
AFTER = {"node1": {"eth1": {"rx_errors": 0.0}}, "node2": {"eth1": {"rx_errors": 0.0}}}


def test_a_port_or_gpu_gone_after_a_pass_is_an_error_record() -> None:
    recs = counter_records("r1", 7, BEFORE, AFTER, "2026-01-01T00:00:00Z")
    got = {(r["host"], r["device"], r["counter"], r["delta"], r["severity"], r["soak_pass"]) for r in recs}
    assert got == {
        ("node1", "mlx5_0:1", "vanished", 1.0, "error", 7),
        ("node1", "gpu2", "vanished", 1.0, "error", 7),
    }
    assert all(r["kind"] == "counter" and r["value"] == 0.0 for r in recs)


def test_a_vanished_port_or_gpu_is_a_finding_naming_host_and_component() -> None:
    recs = counter_records("r1", 7, BEFORE, AFTER, "2026-01-01T00:00:00Z")
    found = {(f.component, f.hosts, f.extra["device"], f.status) for f in stability([], [], recs)}
    assert found == {
        ("network port", ("node1",), "mlx5_0:1", "unstable"),
        ("gpu", ("node1",), "gpu2", "unstable"),
    }


def test_a_device_that_stays_or_appears_is_no_vanishing() -> None:
    later = {"node1": {**BEFORE["node1"], "eth2": {"rx_errors": 0.0}}}
    assert counter_records("r1", 8, BEFORE, later, "2026-01-01T00:00:00Z") == []


# -- the ranks' watchdog while a soak holds the signals ---------------------------------------
WATCHED = """
import os, signal, sys, time
from netbench.watchdog import Watchdog
signal.signal(signal.SIGTERM, lambda *a: None)  # the soak's own handler: it only notes the stop
wd = Watchdog(60, speak=True, where="records kept")
wd.defer_signals(True, {grace})
os.kill(os.getpid(), signal.SIGTERM)
time.sleep(2.0)  # the pass in flight
print("pass finished", flush=True)
"""


def _watched(grace: float | None) -> subprocess.CompletedProcess[str]:
    code = WATCHED.format(grace=grace)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30, env=env)


def test_the_watchdog_leaves_a_stop_to_the_soak() -> None:
    p = _watched(None)
    assert p.returncode == 0 and "pass finished" in p.stdout, (p.returncode, p.stdout, p.stderr)
    assert "stop asked; the pass in flight finishes, then the soak stops" in p.stderr


def test_the_watchdog_ends_a_pass_not_over_within_the_grace() -> None:
    p = _watched(0.5)  # the pass needs 2 s
    assert p.returncode == 3 and "pass finished" not in p.stdout, (p.returncode, p.stdout, p.stderr)
    assert "did not finish within 0.5 s of the stop" in p.stderr


def test_a_closed_watchdog_gives_back_the_signal_wakeup_fd() -> None:
    """A sweep run inside a process that goes on (stoker's own tests) leaves no watcher behind:
    otherwise the next SIGINT the process receives ends it with the watchdog's exit 3."""
    from netbench.watchdog import Watchdog

    before = signal.set_wakeup_fd(-1)
    signal.set_wakeup_fd(before)
    wd = Watchdog(60, speak=False, where="")
    mine = signal.set_wakeup_fd(-1)  # the watchdog's pipe, put back at once
    signal.set_wakeup_fd(mine)
    assert mine != before
    wd.close()
    assert signal.set_wakeup_fd(before) == before
