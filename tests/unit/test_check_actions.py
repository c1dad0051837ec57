"""`stoker check`'s pure parts: the steps, the outcome, the Slurm and Kubernetes decisions,
`stoker drain`'s culprits, and the metrics file read while it is rewritten."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from launchers.actions import check_plan as cp
from launchers.actions import node_actions as na
from launchers.actions.prom_export import Metric, registry, write
from launchers.commands.drain_cmd import culprits
from reports.shared.findings import Finding, Status

S = ("stoker",)


def finding(status: Status = "below_spec", host: str = "n1", check: str = "gpu errors") -> Finding:
    return Finding(
        component="gpu",
        check=check,
        status=status,
        measured=1.0,
        expected=0.0,
        unit="rows",
        hosts=(host,),
        message=f"{host} GPU3 has 1 pending row remap: reset the GPU",
        extra={"device": "GPU3"},
    )


def test_steps_cpu_node_skip_the_copy_and_stay_short() -> None:
    plan = cp.steps(which=cp.STEPS, stoker=S, out="/o", io_path="/var/tmp", gpus=0, size=0, net_timeout_s=15)
    assert [s.name for s in plan] == ["inventory", "net", "io"]
    assert "--no-copy" in plan[0].argv
    net = plan[1].argv
    assert net[net.index("--backend") + 1] == "gloo" and net[net.index("-b") + 1] == str(cp.CPU_BYTES)
    assert plan[2].argv[plan[2].argv.index("--runtime") + 1] == "2"


def test_steps_use_the_accepted_plateau_size_and_nccl_on_gpus() -> None:
    (net,) = cp.steps(which=["net"], stoker=S, out="/o", io_path="/x", gpus=8, size=1 << 30, net_timeout_s=15)
    a = net.argv
    assert (a[a.index("--nproc") + 1], a[a.index("--backend") + 1], a[a.index("-e") + 1]) == (
        "8",
        "nccl",
        str(1 << 30),
    )
    assert cp.steps(which=["net"], stoker=S, out="/o", io_path="/x", gpus=1, size=0, net_timeout_s=15) == []


def test_outcome_fail_beats_incomplete_and_healthy_is_silent() -> None:
    hung = cp.StepResult(name="io", rc=124, elapsed_s=30.0, last_line="")
    o = cp.outcome([finding(), finding("ok")], [hung])
    assert o.verdict == "fail" and len(o.problems) == 2 and o.failed_checks == ("gpu errors",)
    assert o.problems[0] == "n1 gpu GPU3 below_spec: n1 GPU3 has 1 pending row remap: reset the GPU"
    assert o.reasons == ("gpu errors GPU3 below_spec",)
    assert cp.outcome([finding("ok")], [hung]).verdict == "incomplete"
    healthy = cp.outcome([finding("ok"), finding("no_reference")], [])
    assert (healthy.verdict, healthy.problems) == ("pass", ())


def test_drain_a_failing_node_with_a_stoker_reason_naming_its_check() -> None:
    node = na.parse_sinfo("n1", "n1|idle|none\n")
    assert isinstance(node, na.SlurmNode)
    d = na.slurm_decision(node, [("inventory", "gpu errors GPU3 below_spec")], frozenset())
    assert d.argv == (
        "scontrol",
        "update",
        "NodeName=n1",
        "State=DRAIN",
        "Reason=stoker: [inventory] gpu errors GPU3 below_spec",
    )
    assert d.why == ""  # the action line says it all: nothing printed beside it (action_io)


def test_resume_only_stoker_drains_whose_checks_passed() -> None:
    ours = na.parse_sinfo("n1", "n1|drained|stoker: [inventory] gpu errors | pending\n")
    assert isinstance(ours, na.SlurmNode) and ours.reason == "stoker: [inventory] gpu errors | pending"
    resume = ("scontrol", "update", "NodeName=n1", "State=RESUME")
    assert na.slurm_decision(ours, [], frozenset({"inventory"})).argv == resume
    assert na.slurm_decision(ours, [], frozenset({"io"})).argv is None  # its check did not run
    admin = na.parse_sinfo("n2", "n2|drained|bad DIMM, ticket 42")
    assert isinstance(admin, na.SlurmNode)
    assert na.slurm_decision(admin, [], frozenset(na.TAGS)).argv is None  # an admin's drain stays
    assert na.slurm_decision(admin, [("io", "x")], frozenset()).argv is None  # and keeps its reason
    idle = na.parse_sinfo("n3", "n3|idle|none")
    assert isinstance(idle, na.SlurmNode) and na.slurm_decision(idle, [], frozenset(na.TAGS)).argv is None


def test_reason_is_bounded_and_counts_the_rest() -> None:
    r = na.drain_reason(frozenset({"io"}), ["x" * 500, "b", "c"])
    assert len(r) <= na.MAX_REASON and r.startswith("stoker: [io] x") and r.endswith("(+2 more)")


def test_k8s_taint_label_and_removal() -> None:
    fresh = na.K8sNode(name="gpu-7", taint=None, health=None)
    got = na.k8s_decisions(fresh, [("net", "baseline: intra-node all_reduce busbw")], frozenset())
    assert [d.argv for d in got] == [
        (
            "kubectl",
            "taint",
            "nodes",
            "gpu-7",
            "stoker.dev/unhealthy=net.baseline-intra-node-all_reduce-busbw:NoSchedule",
            "--overwrite",
        ),
        ("kubectl", "label", "nodes", "gpu-7", "stoker.dev/health=fail", "--overwrite"),
    ]
    tainted = na.K8sNode(name="gpu-7", taint="net.regression-node-intra", health="fail")
    assert [d.argv for d in na.k8s_decisions(tainted, [], frozenset({"inventory", "net"}))] == [
        ("kubectl", "taint", "nodes", "gpu-7", "stoker.dev/unhealthy:NoSchedule-"),
        ("kubectl", "label", "nodes", "gpu-7", "stoker.dev/health=pass", "--overwrite"),
    ]
    assert len(na.label_value("é" * 100 + "a" * 100)) <= 63


def test_drain_culprits_are_one_node_own_failing_findings() -> None:
    verdict = {
        "findings": [
            {**finding().to_dict()},
            {**finding("ok", "n2").to_dict()},
            {**finding(host="n3").to_dict(), "hosts": ["n3", "n4"]},  # a link: no one node
            {**finding("regression", "n5", "baseline: best pair busbw").to_dict(), "component": "node"},
        ],
        "measured_hosts": ["n1", "n2", "n3", "n4", "n5"],
    }
    named = culprits(verdict)
    assert sorted(named.hosts) == ["n1", "n5"]
    assert named.hosts["n5"] == ["baseline: best pair busbw GPU3 regression"]


def _metrics(v: float) -> list[Metric]:
    return [
        Metric(host="n1", device="", scope="intra-node", op="all_reduce", what=f"w{i}", value=v)
        for i in range(200)
    ]


def test_metrics_file_parses_and_is_never_half_written(tmp_path: Path) -> None:
    path = str(tmp_path / "stoker.prom")
    write(path, registry("n1", _metrics(1.0), [], 1.0))
    stop = threading.Event()
    seen: list[int] = []
    errors: list[str] = []

    def reader() -> None:
        while not stop.is_set():
            text = Path(path).read_text()
            fams = {f.name: f for f in text_string_to_metric_families(text)}
            n = len(fams["stoker_figure_gbps"].samples)
            if n != 200 or "stoker_check_duration_seconds" not in fams:
                errors.append(f"{n} samples")
            seen.append(n)

    t = threading.Thread(target=reader)
    t.start()
    for k in range(300):
        write(path, registry("n1", _metrics(float(k)), [], 1.0))
    stop.set()
    t.join()
    assert not errors and len(seen) > 10
    fams = {f.name: f for f in text_string_to_metric_families(Path(path).read_text())}
    s = fams["stoker_figure_gbps"].samples[0]
    assert s.labels == {"host": "n1", "device": "", "scope": "intra-node", "op": "all_reduce", "what": "w0"}
    assert s.value == 299.0
    # no temp file left; the one writer's ledger says the file is stoker's
    assert sorted(p.name for p in tmp_path.iterdir()) == [".stoker-outputs", "stoker.prom"]


def _regression(measured: float, status: Status = "regression") -> Finding:
    """A baseline finding as reports.judging.fleet.baseline writes it (hand-built): accepted 10 GB/s."""
    return Finding(
        component="node",
        check="baseline: checkpoint_write write on /scratch",
        status=status,
        measured=measured,
        expected=10.0,
        unit="GB/s",
        hosts=("n1",),
        message="n1 checkpoint_write write on /scratch: regressed",
        extra={"basis": "baseline", "figure": "node-storage", "scope": "local", "path": "/scratch"},
    )


def test_a_regression_measured_again_and_passing_is_a_transient_and_drains_nothing() -> None:
    from launchers.actions.check_actions import plan
    from reports.judging.confirm import BASELINE, merge

    tagged = [("inventory", finding("ok")), ("io", _regression(7.6))]
    assert cp.to_confirm(tagged) == ["io"]  # only the step whose figure regressed, never the inventory
    _, g = merge([f for _, f in tagged], [_regression(8.4, "ok")], BASELINE)
    assert (g.status, g.extra["first_GBps"], g.extra["confirm_GBps"]) == ("transient", 7.6, 8.4)
    merged = [tagged[0], ("io", g)]
    o = cp.outcome([x for _, x in merged], [])
    assert o.verdict == "pass" and o.problems == ()
    p = plan(merged, o, [cp.StepResult(name="io", rc=0, elapsed_s=1.0)])
    # nothing to drain, and a transient clears nothing either (resume needs the io figure ok)
    assert p.drain == () and "io" not in p.passed
    # still under when measured again: a regression, both figures in it
    (_, still) = merge([f for _, f in tagged], [_regression(7.7)], BASELINE)
    assert still.status == "regression" and (still.extra["first_GBps"], still.extra["confirm_GBps"]) == (
        7.6,
        7.7,
    )
    assert still.message.endswith("7.7 GB/s, still under.")


def test_a_regression_not_measured_again_drains_nothing_and_the_check_is_incomplete() -> None:
    """The io step had no time left to run again: its 7.6 GB/s figure stays measured once,
    `unconfirmed`: a line saying so, verdict incomplete (exit 3), nothing to drain; beside a
    confirmed failing finding the check fails, and only that one is drained."""
    from launchers.actions.check_actions import plan
    from reports.judging.confirm import BASELINE, merge

    tagged = [("inventory", finding("ok")), ("io", _regression(7.6))]
    merged = cp.unconfirmed(merge([f for _, f in tagged], [], BASELINE))
    assert merged[1].extra["unconfirmed"] is True and "not confirmed" in merged[1].message
    o = cp.outcome(merged, [])
    assert (o.verdict, cp.EXIT[o.verdict], len(o.problems), o.reasons) == ("incomplete", 3, 1, ())
    both = [("inventory", finding("below_spec")), ("io", merged[1])]
    o = cp.outcome([f for _, f in both], [])
    assert o.verdict == "fail" and len(o.problems) == 2
    assert [t for t, _ in plan(both, o, []).drain] == ["inventory"]
    # a confirmed one keeps its status and drains as before
    (_, still) = cp.unconfirmed(merge([f for _, f in tagged], [_regression(7.7)], BASELINE))
    assert "unconfirmed" not in still.extra


def test_the_checks_dataloader_reads_the_data_set_stoker_io_accepts_by_default() -> None:
    """Files per worker as `stoker io`'s default (64 of 4 MiB): a figure read over 4 files is
    another data set, not the accepted one."""
    from iobench.workloads import IoSettings

    (io,) = cp.steps(which=["io"], stoker=S, out="/o", io_path="/var/tmp", net_timeout_s=15)
    a = dict(zip(io.argv[::2], io.argv[1::2], strict=False)) | dict(
        zip(io.argv[1::2], io.argv[2::2], strict=False)
    )
    assert (
        (a["--files-per-worker"], a["--file-bytes"])
        == (str(IoSettings().dl_files), str(4 << 20))
        == ("64", "4194304")
    )


def test_the_confirmation_measures_again_only_the_workloads_that_regressed() -> None:
    """A dataloader_read regression: the io step again with `--workloads dataloader` alone; a
    finding that does not say its workload: both families, as the first run."""
    dl = _regression(0.9)
    dl = replace(dl, extra={**dl.extra, "workload": "dataloader_read"})
    assert cp.io_families([("io", dl), ("net", _regression(1.0))]) == ("dataloader",)
    assert cp.io_families([("io", _regression(0.9))]) == ("checkpoint", "dataloader")
    (io,) = cp.steps(
        which=["io"], stoker=S, out="/o", io_path="/p", net_timeout_s=15, io_workloads=("dataloader",)
    )
    assert io.argv[io.argv.index("--workloads") + 1] == "dataloader"
