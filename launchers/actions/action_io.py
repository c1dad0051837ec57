"""The scheduler commands of `stoker check` and `stoker drain`, run (or, dry, printed) under a
time limit: the IO half of launchers/actions/node_actions.py.

Each node is first asked of the scheduler (sinfo, `kubectl get`); the rules decide from its
answer; each command is printed as it is taken; a command that fails, times out, or has no time
left is one line on stderr naming it, and the caller's exit is ACTION_FAILED. A dry run runs
nothing, not even the query: it prints the query and what it would run for each answer.
Every command runs in its own process group, ended whole at its time limit, so a hung sinfo
never holds the check past --limit.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import time
from collections.abc import Sequence

from launchers.actions import node_actions as na
from launchers.local.phases import end_group
from reports.shared.hostnames import actionable_host, why_not_plain

TOOL_TIMEOUT_S = 10.0  # one scontrol / sinfo / kubectl call, at most
MIN_CALL_S = 0.5  # less time than this left: the command is not started
ACTION_FAILED = 4  # exit code: an action stoker meant to take failed (docs/contract.md)


class Actor:
    """Runs or prints the commands of one stoker command (`who`: "stoker check"), keeping
    the failures for the exit code."""

    def __init__(self, who: str, dry_run: bool, deadline: float | None = None) -> None:
        self.who, self.dry_run, self.deadline = who, dry_run, deadline
        self.failed: list[str] = []

    def say(self, text: str) -> None:
        print(f"{self.who}: {text}", flush=True)

    def fail(self, text: str) -> None:
        print(f"{self.who}: {text}", file=sys.stderr, flush=True)
        self.failed.append(text)

    def run(self, argv: Sequence[str]) -> str | None:
        """stdout of `argv`, or None when it failed (said on stderr)."""
        left = (
            TOOL_TIMEOUT_S if self.deadline is None else min(TOOL_TIMEOUT_S, self.deadline - time.monotonic())
        )
        cmd = shlex.join(argv)
        if left < MIN_CALL_S:
            self.fail(f"no time left under --limit for `{cmd}`; not run")
            return None
        try:
            proc = subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                errors="replace",
                start_new_session=True,
            )
        except OSError as exc:
            self.fail(f"`{cmd}` failed: {exc.strerror or exc}")
            return None
        try:
            out, err = proc.communicate(timeout=left)
        except subprocess.TimeoutExpired:
            end_group(proc, 1.0, 1.0)
            self.fail(f"`{cmd}` did not answer within {left:.1f} s; stopped")
            return None
        except KeyboardInterrupt:
            end_group(proc, 1.0, 1.0)
            raise
        if proc.returncode != 0:
            self.fail(f"`{cmd}` exited {proc.returncode}: {' '.join(err.split())[:200]}")
            return None
        return out

    def act(self, argv: Sequence[str]) -> None:
        self.say(f"running: {shlex.join(argv)}")
        self.run(argv)


def slurm(actor: Actor, host: str, failing: Sequence[tuple[str, str]], passed: frozenset[str]) -> None:
    """Drain `host` for `failing` ((tag, reason)), or resume stoker's drain of it when every
    check named there is in `passed`; from the node's state as sinfo answers it now."""
    node, why = na.slurm_name(host)
    if not node:
        actor.say(f"{host!a} {why}: left as it is")
        return
    query = na.sinfo_argv(node)
    if actor.dry_run:
        print(f"would run: {shlex.join(query)}")
        if failing:
            argv = na.slurm_decision(
                na.SlurmNode(name=node, state="idle", reason="none"), failing, passed
            ).argv
            print(
                f"would run, if sinfo answers for {node} alone and it is idle, mixed or allocated: "
                f"{shlex.join(argv or ())}"
            )
        else:
            print(
                f"would run, if sinfo answers for {node} alone, drained by stoker for checks all in "
                f"[{na.tag_list(passed)}]: {shlex.join(na.slurm_decision(_ours(node, passed), (), passed).argv or ())}"
            )
        return
    text = actor.run(query)
    if text is None:
        actor.say(f"{node} left as it is")
        return
    state = na.parse_sinfo(node, text)
    if isinstance(state, str):
        actor.fail(f"{state}; {node} left as it is")
        return
    d = na.slurm_decision(state, failing, passed)
    if d.why:
        actor.say(f"{node} {d.why}")
    if d.argv:
        actor.act(d.argv)


def _ours(node: str, tags: frozenset[str]) -> na.SlurmNode:
    return na.SlurmNode(name=node, state="drained", reason=na.drain_reason(tags, ["x"]))


def k8s(actor: Actor, node: str, failing: Sequence[tuple[str, str]], passed: frozenset[str]) -> None:
    """Taint and label `node` for `failing` ((tag, check)), or untaint and label it when it passed."""
    if not actionable_host(node):
        actor.say(f"--k8s-node {node!a} {why_not_plain(node) or 'is a placeholder'}: left as it is")
        return
    query = na.k8s_get_argv(node)
    if actor.dry_run:
        print(f"would run: {shlex.join(query)}")
        fresh = na.K8sNode(name=node, taint=None, health=None)
        if failing:
            cond = f"kubectl answers for {node} (taint values already there are kept and added to)"
            decisions = na.k8s_decisions(fresh, failing, passed)
        else:
            cond = f"{node} has stoker's taint naming only checks in [{na.tag_list(passed)}]"
            tainted = na.K8sNode(name=node, taint=na.taint_value(passed, "x"), health="fail")
            decisions = na.k8s_decisions(tainted, failing, passed)
        for d in decisions:
            if d.argv:
                print(f"would run, if {cond}: {shlex.join(d.argv)}")
        return
    text = actor.run(query)
    if text is None:
        actor.say(f"{node} left as it is")
        return
    state = na.parse_k8s_node(node, text)
    if isinstance(state, str):
        actor.fail(f"{state}; {node} left as it is")
        return
    for d in na.k8s_decisions(state, failing, passed):
        if d.why:
            actor.say(f"{node} {d.why}")
        if d.argv:
            actor.act(d.argv)
