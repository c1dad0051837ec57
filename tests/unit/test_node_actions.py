"""The action rules (launchers/actions/node_actions.py, launchers/actions/check_actions.py), table-driven: which
node name, which sinfo answer, which state, which finding lets stoker drain, resume, taint or
untaint. sinfo lines below are hand-written in sinfo's `-o '%N|%T|%E'` format."""

from __future__ import annotations

import pytest

from launchers.actions import check_actions as ca
from launchers.actions import check_plan as cp
from launchers.actions import node_actions as na
from reports.shared.findings import Finding


@pytest.mark.parametrize(
    ("host", "short"),
    [
        ("n1", "n1"),
        ("gpu-001.cluster.example.org", "gpu-001"),  # scontrol and sinfo get the short name
        ("gpu[001-512]", ""),
        ("n1,n2", ""),
        ("n1 n2", ""),
        ("n1\nn2", ""),
        ("ALL", ""),
        ("all", ""),
        ("unknown", ""),  # a placeholder: never acted on
        ("localhost", ""),
        ("10.0.0.5", ""),  # an address: its "short name" 10 could be another node
        ("-n1", ""),
        ("", ""),
        # checked on exactly what scontrol gets, after shortening
        ("ALL.cluster", ""),  # NodeName=ALL: every node
        ("all.example.org", ""),
        ("localhost.localdomain", ""),  # a placeholder once shortened
        ("unknown.cluster", ""),
        ("1.2.3.4x", ""),  # NodeName=1
        ("007.cluster", ""),
        ("GPU02.cluster.local", "GPU02"),
    ],
)
def test_only_one_plain_node_name_is_acted_on(host: str, short: str) -> None:
    name, why = na.slurm_name(host)
    assert name == short and bool(why) == (not short), (name, why)


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("n1|idle|none\n", True),
        ("n1|idle|none\nn1|idle|none\n", True),  # one node in two partitions: the same line twice
        ("", False),  # sinfo knows no such node
        ("n1|idle|none\nn2|drained|bad DIMM\n", False),  # an answer for a range
        ("n10|idle|none\n", False),  # another node
        ("n1|idle|none\nn1|drained|x\n", False),  # two different answers
        ("idle|none\n", False),  # no name printed: not confirmed
    ],
)
def test_sinfo_must_answer_for_exactly_that_one_node(text: str, ok: bool) -> None:
    got = na.parse_sinfo("n1", text)
    assert isinstance(got, na.SlurmNode) == ok, got


# state as sinfo %T prints it -> what stoker does on a failing check with a plain finding
STATES = [
    ("idle", "none", "drain"),
    ("mixed", "none", "drain"),
    ("allocated", "none", "drain"),
    ("idle*", "none", "drain"),  # not responding, no admin state
    ("down", "Not responding", "keep"),
    ("down*", "Not responding", "keep"),
    ("fail", "bad PSU", "keep"),
    ("failing", "bad PSU", "keep"),
    ("maint", "none", "keep"),
    ("idle$", "none", "keep"),  # a maintenance reservation
    ("reboot^", "none", "keep"),
    ("drained", "bad DIMM, ticket 42", "keep"),
    ("drained*", "bad DIMM", "keep"),
    ("draining", "bad DIMM", "keep"),
    ("mixed+drain", "bad DIMM", "keep"),
    ("down+drain", "stoker: [net] x", "keep"),  # down too: not stoker's to change
    ("drained", "stoker: [net] x", "drain"),  # stoker's drain: the new check is added
    ("drained", "stoker: [io] x", "keep"),  # already drained by stoker for io
    ("drained", "stoker: baseline: x", "keep"),  # an untagged stoker reason: unsure
    ("future", "none", "keep"),  # a state the table does not know
]


@pytest.mark.parametrize(("state", "reason", "does"), STATES)
def test_a_failing_check_drains_only_a_state_stoker_may_change(state: str, reason: str, does: str) -> None:
    node = na.SlurmNode(name="n1", state=state, reason=reason)
    d = na.slurm_decision(node, [("io", "baseline: w regression")], frozenset())
    assert ("drain" if d.argv else "keep") == does, d
    if d.argv is None:
        assert d.why  # said, never silent
    else:
        assert d.argv[3] == "State=DRAIN" and d.argv[4].startswith("Reason=stoker: [")


def test_a_stoker_drain_for_another_check_keeps_both_names() -> None:
    node = na.SlurmNode(name="n1", state="drained", reason="stoker: [net] wrong elements")
    d = na.slurm_decision(node, [("io", "w regression")], frozenset())
    assert d.argv is not None and d.argv[4] == "Reason=stoker: [net,io] w regression"


# (state, reason, checks that ran and passed) -> resumed?
RESUMES = [
    ("drained", "stoker: [io] w regression", {"inventory"}, False),  # inventory must not clear io
    ("drained", "stoker: [io] w regression", {"inventory", "io"}, True),
    ("draining", "stoker: [inventory,io] x", {"io"}, False),
    ("drained*", "stoker: [inventory] x", {"inventory"}, True),
    ("drained", "stoker: [report] pair busbw", {"inventory", "net", "io"}, False),  # stoker drain's
    ("drained", "stoker: baseline: x", {"inventory", "net", "io"}, False),  # untagged
    ("drained", "bad DIMM", {"inventory", "net", "io"}, False),
    ("down+drain", "stoker: [io] x", {"io"}, False),
    ("maint", "stoker: [io] x", {"io"}, False),
    ("idle", "none", {"io"}, False),
]


@pytest.mark.parametrize(("state", "reason", "passed", "resumed"), RESUMES)
def test_resume_only_what_stoker_drained_when_its_checks_passed(
    state: str, reason: str, passed: set[str], resumed: bool
) -> None:
    d = na.slurm_decision(na.SlurmNode(name="n1", state=state, reason=reason), [], frozenset(passed))
    assert (d.argv == ("scontrol", "update", "NodeName=n1", "State=RESUME")) == resumed, d


@pytest.mark.parametrize(
    ("taint", "passed", "untainted"),
    [
        ("io.regression-node-storage", {"inventory"}, False),
        ("io.regression-node-storage", {"inventory", "io"}, True),
        ("inventory_net.gpu-errors", {"inventory"}, False),
        ("regression-node-storage", {"inventory", "net", "io"}, False),  # names no checks
        ("report.x", {"inventory", "net", "io"}, False),
    ],
)
def test_untaint_only_when_the_checks_the_taint_names_passed(
    taint: str, passed: set[str], untainted: bool
) -> None:
    node = na.K8sNode(name="gpu-7", taint=taint, health="fail")
    argvs = [d.argv for d in na.k8s_decisions(node, [], frozenset(passed)) if d.argv]
    assert (("kubectl", "taint", "nodes", "gpu-7", "stoker.dev/unhealthy:NoSchedule-") in argvs) == untainted
    assert bool(argvs) == untainted  # no `pass` label while stoker's taint stays


def test_a_taint_keeps_the_checks_already_named() -> None:
    node = na.K8sNode(name="gpu-7", taint="io.regression-node-storage", health="fail")
    (d,) = na.k8s_decisions(node, [("inventory", "gpu errors")], frozenset())
    assert d.argv == (
        "kubectl",
        "taint",
        "nodes",
        "gpu-7",
        "stoker.dev/unhealthy=inventory_io.gpu-errors:NoSchedule",
        "--overwrite",
    )


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ('{"kind": "Node", "metadata": {"name": "gpu-7"}, "spec": {}}', True),
        ('{"kind": "Node", "metadata": {"name": "gpu-8"}, "spec": {}}', False),
        ('{"kind": "List", "items": []}', False),
        ("", False),
    ],
)
def test_kubectl_must_answer_for_that_node(text: str, ok: bool) -> None:
    assert isinstance(na.parse_k8s_node("gpu-7", text), na.K8sNode) == ok


@pytest.mark.parametrize(
    ("component", "extra", "own"),
    [
        ("gpu", {}, True),
        ("network port", {}, True),
        ("node", {"figure": "node-pair"}, True),
        ("local storage", {}, True),
        ("shared storage", {}, False),
        ("intra-node network", {}, False),
        ("inter-node network", {}, False),
        ("link", {}, False),
        ("node", {"figure": "node-storage"}, False),  # a node's share of which storage?
        ("node", {"figure": "node-storage", "scope": "shared", "path": "/lustre"}, False),
        ("node", {"figure": "node-storage", "scope": "local", "path": "/nvme"}, True),
    ],
)
def test_only_the_node_own_findings_drain(component: str, extra: dict[str, str], own: bool) -> None:
    assert (na.not_node_own(component, extra) == "") == own


def _f(status: str, figure: str, component: str = "node", **where: str) -> Finding:
    return Finding(
        component=component,  # type: ignore[arg-type]
        check=f"baseline: {figure}",
        status=status,  # type: ignore[arg-type]
        measured=1.0,
        expected=2.0,
        unit="GB/s",
        hosts=("n1",),
        message="m",
        extra={"figure": figure, **where},
    )


def test_check_plan_passes_only_steps_that_ran_and_judged() -> None:
    tagged = [("io", _f("ok", "node-storage", scope="local"))]
    ran = [cp.StepResult(name=n, rc=0, elapsed_s=1.0) for n in ("inventory", "io")]
    p = ca.plan(tagged, cp.outcome([f for _, f in tagged], ran), ran)
    assert p.passed == {"inventory", "io"} and p.drain == ()
    # io ran without a baseline figure: nothing judged, nothing it can clear
    p = ca.plan([], cp.outcome([], ran), ran)
    assert p.passed == {"inventory"}


@pytest.mark.parametrize(
    ("where", "drains"),
    [
        ({}, False),
        ({"scope": "shared", "path": "/lustre"}, False),
        ({"scope": "local", "path": "/nvme"}, True),
    ],
)
def test_check_plan_drains_for_a_local_disk_only(where: dict[str, str], drains: bool) -> None:
    tagged = [("io", _f("regression", "node-storage", **where))]
    ran = [cp.StepResult(name="io", rc=0, elapsed_s=1.0)]
    p = ca.plan(tagged, cp.outcome([f for _, f in tagged], ran), ran)
    assert p.drain == ((("io", "baseline: node-storage regression (1 < 2 GB/s)"),) if drains else ())
    assert p.passed == frozenset()
    if not drains:
        assert p.left and p.left[0].endswith(": no action")


def test_check_and_drain_judge_one_baseline_finding_alike() -> None:
    """The findings `stoker check` and `stoker report --baseline` both make (judge_evidence):
    n1's local /nvme and n2's share of /lustre, each at a third of the accepted figure. Both
    are regressions; only the local disk is the node's own, in check's plan and in drain's
    culprits (which read the finding as verdict.json carries it)."""
    from launchers.commands.drain_cmd import culprits
    from reports import evidence
    from reports.judging.fleet.baseline import make
    from reports.judging.fleet.baseline_figures import figures as run_figures
    from reports.judging.fleet.baseline_figures import judge_evidence
    from reports.table.read import RecordSet
    from tests.unit.recordgen import io

    def run(local: float, shared: float) -> RecordSet:
        return RecordSet(
            io=[
                io("checkpoint_write", "write", "/nvme", local, scope="local", per_host={"n1": local}),
                io("checkpoint_write", "write", "/lustre", shared, scope="shared", per_host={"n2": shared}),
            ]
        )

    base = make("acc-1", "t", run_figures(evidence.build(run(3.0, 3.0))))
    found = judge_evidence(base, evidence.build(run(1.0, 1.0)))
    assert [(f.status, f.hosts, f.extra["scope"], f.extra["path"]) for f in found] == [
        ("regression", ("n1",), "local", "/nvme"),
        ("regression", ("n2",), "shared", "/lustre"),
    ]
    tagged = [("io", f) for f in found]
    ran = [cp.StepResult(name="io", rc=0, elapsed_s=1.0)]
    p = ca.plan(tagged, cp.outcome(found, ran), ran)
    assert [t for t, _ in p.drain] == ["io"] and len(p.left) == 1 and "/lustre" in p.left[0]
    named = culprits({"findings": [f.to_dict() for f in found], "measured_hosts": ["n1", "n2"]})
    assert list(named.hosts) == ["n1"]
    assert len(named.left) == 1 and "/lustre is shared storage" in named.left[0]
