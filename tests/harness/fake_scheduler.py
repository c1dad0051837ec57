"""Fake `sinfo`, `scontrol` and `kubectl` for tests: executables put first on PATH that log
the argv they get (one JSON list a line) and answer from a state the test scripts.

Hand-written test doubles in the real tools' formats (no real output is copied):
`sinfo -h -N -n NODE -o FMT` prints one line per node with `%N` (name), `%T` (long state) and
`%E` (reason, `none` when there is none) replaced, as Slurm's sinfo does; `scontrol update
NodeName=N State=DRAIN|RESUME [Reason=R]` changes the node (DRAIN: idle -> drained, mixed or
allocated -> draining; RESUME: idle, no reason) and fails with "Invalid node name specified"
for a node it does not know; `kubectl get nodes N -o json` prints a v1 Node with its labels
and taints, `kubectl taint nodes N K=V:E --overwrite` / `K:E-` and `kubectl label nodes N K=V
--overwrite` change them, and an unknown node is `Error from server (NotFound)`, exit 1.

    fake = FakeScheduler(tmp_path, slurm={"n1": ("idle", "none")})
    subprocess.run([...stoker drain...], env=fake.env())
    assert fake.calls() == [["sinfo", ...], ["scontrol", ...]]

`sinfo_lines` replaces sinfo's answer for a name (an answer for several nodes, say); `hang`
names tools that hang (their pid is written to `<root>/<tool>.pid`).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

TOOLS = ("sinfo", "scontrol", "kubectl")
WRAPPER = '#!/bin/sh\n# hand-written test double (tests/harness/fake_scheduler.py)\nexec "{python}" "{me}" {tool} "{state}" "$@"\n'


class FakeScheduler:
    def __init__(
        self,
        root: Path,
        slurm: dict[str, tuple[str, str]] | None = None,
        k8s: dict[str, dict[str, Any]] | None = None,
        sinfo_lines: dict[str, list[str]] | None = None,
        hang: tuple[str, ...] = (),
    ) -> None:
        self.root = root
        self.bin = root / "fake-bin"
        self.bin.mkdir(parents=True, exist_ok=True)
        self.state_file = root / "fake-state.json"
        self.log = root / "fake-calls.jsonl"
        self.save(
            {
                "slurm": {k: list(v) for k, v in (slurm or {}).items()},
                "k8s": k8s or {},
                "sinfo_lines": sinfo_lines or {},
                "hang": list(hang),
                "log": str(self.log),
                "root": str(root),
            }
        )
        for tool in TOOLS:
            p = self.bin / tool
            p.write_text(WRAPPER.format(python=sys.executable, me=__file__, tool=tool, state=self.state_file))
            p.chmod(0o755)

    def save(self, state: dict[str, Any]) -> None:
        self.state_file.write_text(json.dumps(state))

    def state(self) -> dict[str, Any]:
        return dict(json.loads(self.state_file.read_text()))

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k != "SLURMD_NODENAME"}
        return {**env, "PATH": f"{self.bin}{os.pathsep}{env['PATH']}", **extra}

    def calls(self) -> list[list[str]]:
        if not self.log.exists():
            return []
        return [json.loads(ln) for ln in self.log.read_text().splitlines()]

    def node(self, name: str) -> tuple[str, str]:
        state, reason = self.state()["slurm"][name]
        return state, reason

    def k8s_node(self, name: str) -> dict[str, Any]:
        return dict(self.state()["k8s"][name])


# -- the tools themselves (run as `python fake_scheduler.py TOOL STATE ARGS...`) ----------
def _sinfo(st: dict[str, Any], args: list[str]) -> int:
    name = args[args.index("-n") + 1] if "-n" in args else None
    fmt = args[args.index("-o") + 1] if "-o" in args else "%N %T"
    if name in st["sinfo_lines"]:
        print("\n".join(st["sinfo_lines"][name]))
        return 0
    for n, (state, reason) in st["slurm"].items():
        if name is None or n == name:
            print(fmt.replace("%N", n).replace("%T", state).replace("%E", reason or "none"))
    return 0


def _scontrol(st: dict[str, Any], args: list[str]) -> int:
    fields = dict(a.split("=", 1) for a in args[1:] if "=" in a)
    name = fields.get("NodeName", "")
    if args[:1] != ["update"] or name not in st["slurm"]:
        print(f"scontrol: error: Invalid node name specified: {name}", file=sys.stderr)
        return 1
    state = st["slurm"][name][0]
    if fields.get("State") == "DRAIN":
        st["slurm"][name] = ["drained" if state.startswith("idle") else "draining", fields.get("Reason", "")]
    elif fields.get("State") == "RESUME":
        st["slurm"][name] = ["idle", "none"]
    return 0


def _kubectl(st: dict[str, Any], args: list[str]) -> int:
    verb, kind, name = (args + ["", "", ""])[:3]
    node = st["k8s"].get(name)
    if kind not in ("node", "nodes") or node is None:
        print(f'Error from server (NotFound): nodes "{name}" not found', file=sys.stderr)
        return 1
    if verb == "get":
        meta = {"name": name, "labels": node.get("labels", {})}
        print(
            json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": meta,
                    "spec": {"taints": node.get("taints", [])},
                }
            )
        )
        return 0
    (change,) = [a for a in args[3:] if not a.startswith("--")]
    if verb == "label":
        k, _, v = change.partition("=")
        node.setdefault("labels", {})[k] = v
        return 0
    if change.endswith("-"):
        key, _, effect = change[:-1].partition(":")
        kept = [t for t in node.get("taints", []) if (t["key"], t["effect"]) != (key, effect)]
        if len(kept) == len(node.get("taints", [])):
            print(f"error: taint {change[:-1]!r} not found", file=sys.stderr)
            return 1
        node["taints"] = kept
        return 0
    kv, _, effect = change.rpartition(":")
    key, _, value = kv.partition("=")
    others = [t for t in node.get("taints", []) if (t["key"], t["effect"]) != (key, effect)]
    node["taints"] = [*others, {"key": key, "value": value, "effect": effect}]
    return 0


def _main(argv: list[str]) -> int:
    tool, state_file, args = argv[0], Path(argv[1]), argv[2:]
    st = json.loads(state_file.read_text())
    with open(st["log"], "a") as log:
        log.write(json.dumps([tool, *args]) + "\n")
    if tool in st["hang"]:
        Path(st["root"], f"{tool}.pid").write_text(str(os.getpid()))
        time.sleep(300)
    rc = {"sinfo": _sinfo, "scontrol": _scontrol, "kubectl": _kubectl}[tool](st, args)
    state_file.write_text(json.dumps(st))
    return rc


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
