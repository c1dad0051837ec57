"""A namespaced multi-node cluster on one machine, with links of a known speed (root only).

Every node is a network namespace `<prefix>-n<i>` with its own UTS host name `<prefix>n<i>`;
each is joined by a veth pair to a bridge that lives in a dedicated switch namespace
`<prefix>-sw`, so nothing touches the root namespace's links or routes. Names resolve in
every node through `/etc/netns/<ns>/hosts` (which `ip netns exec` bind-mounts over
/etc/hosts). Links are shaped with tc: HTB + tbf for a whole node, HTB + u32 for one pair.

    from tests.harness.netns import NetnsCluster, unavailable_reason

    with NetnsCluster(prefix="nx", nodes=2, rate_mbit=1000) as c:
        c.hosts                      # ["nxn0", "nxn1"]
        c.addr(1)                    # "10.x.y.2"
        c.run(0, ["hostname"])       # CompletedProcess, stdout "nxn0\n"
        c.tcp_goodput_bps(0, 1)      # iperf3 TCP goodput from node 1 to node 0, bits/s
        procs = [c.popen(i, c.torchrun_argv(i, nproc=1, nnodes=2, port=29511,
                                            module_args=["-m", "launchers.cli", "net"]),
                         env=c.env(i)) for i in range(2)]

API (stable; other tests build on it):
- `NetnsCluster(prefix, nodes, rate_mbit=None)`: a context manager. `prefix` is 1–8 lower-case
  letters/digits starting with a letter, unique to the caller's area. `rate_mbit` shapes every
  node's uplink at enter (None: unshaped veth, several Gbit/s).
- `hosts`, `namespaces`, `ifname` ("eth0" in every node), `addr(i)`.
- `env(i, extra=None)`: this process's environment plus GLOO_SOCKET_IFNAME and OMP_NUM_THREADS=1.
- `popen(i, argv, env=None, **kw)` / `run(i, argv, timeout=60, env=None)`: argv in node i's
  namespace under its host name. Processes from popen still running at exit are killed.
- `shape_node(i, rate_mbit)`: node i's uplink, both directions (HTB default class on its
  side, tbf on the bridge's port); calling it again changes the rate.
- `shape_pair(i, j, rate_mbit)`: only traffic between i and j (HTB class + u32 filter on the
  peer's address, on both nodes' send side); combines with shape_node, several pairs allowed.
- `netem(i, delay_ms, loss_pct=0.0)`: delay/loss on node i's egress (under its rate if shaped).
- `torchrun_argv(i, nproc, nnodes, port, module_args)`: torchrun with a static rendezvous
  on node 0's address (node ranks are deterministic: global rank = i * nproc + local rank).
- `torchrun(nproc, port, module_args, timeout=300, env=None)`: that command on every node at
  once; [(returncode, stdout, stderr)] per node (returncode -9: killed at the timeout, or
  FAIL_GRACE_S after another node failed).
- `run_all([(node, argv, env), ...], timeout)`: start every job at once, wait for all, output to
  files (never pipes: a chatty rank blocked on a full pipe would hang its peers); a failure
  kills the rest after FAIL_GRACE_S. [(returncode, stdout, stderr)] per job.
- `launch(nproc, port, python_args, timeout=300, env=None)`: the ranks alone, with torchrun's
  environment (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR/PORT) and no agents; per rank.
- `tcp_goodput_bps(server, client, seconds=2.0)`: iperf3 TCP goodput client -> server.
- `unavailable_reason()`: why this machine cannot build one (not root, no `ip netns`, no tc),
  or None; tests call `pytest.skip(reason)` with it.

Teardown (at exit, also on exceptions and Ctrl-C, and at interpreter exit as a backstop)
kills the processes left in the namespaces, deletes every namespace (which deletes their
links) and `/etc/netns/<ns>`. Entering first removes what a crashed run with the same
prefix left behind.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

NETNS_ETC = Path("/etc/netns")
IFNAME = "eth0"
# Buckets must hold at least one GSO super-packet (64 KiB); tbf with 256 KiB / 50 ms was
# measured to give 0.94-0.957 Gbit/s TCP goodput on a 1 Gbit/s link.
BURST = "256kb"
TBF_LATENCY = "50ms"
FAIL_GRACE_S = 15.0  # after one rank fails, how long the others may take to notice and exit
_PREFIX_RE = re.compile(r"^[a-z][a-z0-9]{0,7}$")


def net_argv(scopes: str, size: str = "4M") -> list[str]:
    """`python -m launchers.cli net` on gloo for the namespaced beds: one message size for the
    sweeps and the pairs, 3 timed iterations after 1 warm-up, a 60 s timeout."""
    return [
        "-m", "launchers.cli", "net", "--scopes", scopes,
        "--min-bytes", size, "--max-bytes", size, "--pair-bytes", size,
        "--iters", "3", "--warmup", "1", "--backend", "gloo", "--timeout", "60",
    ]  # fmt: skip


def unavailable_reason() -> str | None:
    """None when namespaces can be built here, else a one-line reason to skip."""
    if os.geteuid() != 0:
        return "needs root to create network namespaces (runs in CI as root)"
    for tool in ("ip", "tc", "unshare"):
        if shutil.which(tool) is None:
            return f"{tool} not installed (apt-get install iproute2 util-linux)"
    probe = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"'ip netns' unavailable: {probe.stderr.strip()}"
    return None


def subnet(prefix: str) -> str:
    """10.A.B.0/24 chosen from the prefix, so that clusters of different areas are easy to
    tell apart in `ip addr` output (they are isolated by their switch namespaces anyway)."""
    h = hashlib.sha256(prefix.encode()).digest()
    return f"10.{200 + h[0] % 50}.{h[1]}"


def run_ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {proc.stderr.strip()}")
    return proc


def run_tc(ns: str, *args: str) -> None:
    proc = subprocess.run(["ip", "netns", "exec", ns, "tc", *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"tc {' '.join(args)} in {ns}: {proc.stderr.strip()}")


def _kill_namespace_pids(ns: str) -> None:
    """Kill what is left in one of this harness's namespaces (processes it started)."""
    out = run_ip("netns", "pids", ns, check=False).stdout.split()
    for pid in (int(p) for p in out if p.isdigit()):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


class NetnsCluster:
    def __init__(self, prefix: str, nodes: int, rate_mbit: float | None = None) -> None:
        if not _PREFIX_RE.match(prefix):
            raise ValueError(f"prefix {prefix!r}: use 1-8 lower-case letters/digits starting with a letter")
        if not 1 <= nodes <= 250:
            raise ValueError(f"nodes={nodes}: use 1..250")
        self.prefix = prefix
        self.n = nodes
        self.rate_mbit = rate_mbit
        self.ifname = IFNAME
        self.switch = f"{prefix}-sw"
        self.namespaces = [f"{prefix}-n{i}" for i in range(nodes)]
        self.hosts = [f"{prefix}n{i}" for i in range(nodes)]
        self._net = subnet(prefix)
        self._procs: list[subprocess.Popen[Any]] = []
        self._classes: dict[int, int] = {}  # node -> pair classes on its HTB tree
        self._node_rate: dict[int, float] = {}  # node -> its shaped rate

    # -- lifecycle ------------------------------------------------------------------
    def __enter__(self) -> NetnsCluster:
        reason = unavailable_reason()
        if reason:
            raise RuntimeError(reason)
        self.teardown(stale=True)
        atexit.register(self.teardown)
        try:
            self._build()
        except BaseException:
            self.teardown()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.teardown()

    def _all_ns(self, stale: bool) -> list[str]:
        if not stale:
            return [self.switch, *self.namespaces]
        # A crashed run may have had more nodes than this one: match every node of the prefix.
        pat = re.compile(rf"^{re.escape(self.prefix)}-(sw|n\d+)$")
        listed = run_ip("netns", "list", check=False).stdout.split("\n")
        return [name.split()[0] for name in listed if name.strip() and pat.match(name.split()[0])]

    def teardown(self, stale: bool = False) -> None:
        for p in self._procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    p.kill()
                p.wait()
        self._procs.clear()
        for ns in self._all_ns(stale):
            _kill_namespace_pids(ns)
            run_ip("netns", "del", ns, check=False)
            shutil.rmtree(NETNS_ETC / ns, ignore_errors=True)
        if not stale:
            atexit.unregister(self.teardown)

    def kill_node(self, i: int) -> None:
        """Node i dies: every process in its namespace is killed (SIGKILL), twice, so that a
        child forked while the first list was read goes too."""
        for _ in range(2):
            _kill_namespace_pids(self.namespaces[i])

    def _build(self) -> None:
        sw = self.switch
        run_ip("netns", "add", sw)
        run_ip("-n", sw, "link", "set", "lo", "up")
        run_ip("-n", sw, "link", "add", "br0", "type", "bridge")
        run_ip("-n", sw, "link", "set", "br0", "up")
        hosts_file = "127.0.0.1\tlocalhost\n" + "".join(
            f"{self.addr(i)}\t{h}\n" for i, h in enumerate(self.hosts)
        )
        for i, ns in enumerate(self.namespaces):
            run_ip("netns", "add", ns)
            run_ip("-n", ns, "link", "set", "lo", "up")
            # Both ends are created inside namespaces: no name ever exists in the root one.
            run_ip("-n", sw, "link", "add", f"p{i}", "type", "veth", "peer", "name", IFNAME, "netns", ns)
            run_ip("-n", sw, "link", "set", f"p{i}", "master", "br0")
            run_ip("-n", sw, "link", "set", f"p{i}", "up")
            run_ip("-n", ns, "addr", "add", f"{self.addr(i)}/24", "dev", IFNAME)
            run_ip("-n", ns, "link", "set", IFNAME, "up")
            etc = NETNS_ETC / ns
            etc.mkdir(parents=True, exist_ok=True)
            (etc / "hosts").write_text(hosts_file)
            (etc / "hostname").write_text(self.hosts[i] + "\n")
        if self.rate_mbit:
            for i in range(self.n):
                self.shape_node(i, self.rate_mbit)
        self._wait_up()

    def _wait_up(self, timeout: float = 10.0) -> None:
        """Veths report carrier within milliseconds; the bridge forwards at once (no STP).
        (No ping: iputils is not installed on these machines.)"""
        deadline = time.monotonic() + timeout
        links = [(ns, IFNAME) for ns in self.namespaces] + [(self.switch, f"p{i}") for i in range(self.n)]
        for ns, dev in links:
            while "state UP" not in run_ip("-n", ns, "link", "show", dev).stdout:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{dev} in {ns} did not come up")
                time.sleep(0.05)

    # -- addressing and processes ---------------------------------------------------
    def addr(self, i: int) -> str:
        return f"{self._net}.{i + 1}"

    def env(self, i: int, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        env = dict(os.environ)
        env.update({"GLOO_SOCKET_IFNAME": IFNAME, "OMP_NUM_THREADS": "1"})
        env.update(extra or {})
        return env

    def wrap(self, i: int, argv: Sequence[str]) -> list[str]:
        """argv run in node i's namespace with node i's UTS host name; argv is passed as
        arguments to a fixed script, never interpolated into a shell string."""
        return [
            "ip",
            "netns",
            "exec",
            self.namespaces[i],
            "unshare",
            "--uts",
            "--",
            "sh",
            "-c",
            'hostname "$1"; shift; exec "$@"',
            "sh",
            self.hosts[i],
            *argv,
        ]

    def popen(
        self, i: int, argv: Sequence[str], env: Mapping[str, str] | None = None, **kw: Any
    ) -> subprocess.Popen[Any]:
        kw.setdefault("start_new_session", True)  # lets teardown kill the whole tree
        p: subprocess.Popen[Any] = subprocess.Popen(
            self.wrap(i, argv), env=dict(env) if env is not None else self.env(i), **kw
        )
        self._procs.append(p)
        return p

    def run(
        self, i: int, argv: Sequence[str], timeout: float = 60.0, env: Mapping[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.wrap(i, argv),
            env=dict(env) if env is not None else self.env(i),
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def torchrun_argv(
        self, i: int, nproc: int, nnodes: int, port: int, module_args: Sequence[str]
    ) -> list[str]:
        return [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nnodes",
            str(nnodes),
            "--nproc-per-node",
            str(nproc),
            "--node-rank",
            str(i),
            "--master-addr",
            self.addr(0),
            "--master-port",
            str(port),
            *module_args,
        ]

    def torchrun(
        self,
        nproc: int,
        port: int,
        module_args: Sequence[str],
        timeout: float = 300.0,
        env: Mapping[str, str] | None = None,
    ) -> list[tuple[int, str, str]]:
        """torchrun on every node at once, `nproc` ranks each; (returncode, stdout, stderr)
        per node. When one fails the others get FAIL_GRACE_S to finish, then are killed
        (returncode -9), as at the timeout; the outputs say why."""
        return self.run_all(
            [
                (i, self.torchrun_argv(i, nproc, self.n, port, module_args), self.env(i, env))
                for i in range(self.n)
            ],
            timeout,
        )

    def launch(
        self,
        nproc: int,
        port: int,
        python_args: Sequence[str],
        timeout: float = 300.0,
        env: Mapping[str, str] | None = None,
    ) -> list[tuple[int, str, str]]:
        """`python *python_args` as `nproc` ranks per node with torchrun's environment contract
        (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, ...) but without its agents: half the
        processes importing torch, for tests that repeat a run. One entry per rank."""
        jobs = []
        for i in range(self.n):
            for local in range(nproc):
                contract = {
                    "RANK": str(i * nproc + local),
                    "WORLD_SIZE": str(self.n * nproc),
                    "LOCAL_RANK": str(local),
                    "LOCAL_WORLD_SIZE": str(nproc),
                    "GROUP_RANK": str(i),
                    "MASTER_ADDR": self.addr(0),
                    "MASTER_PORT": str(port),
                }
                jobs.append((i, [sys.executable, *python_args], self.env(i, {**(env or {}), **contract})))
        return self.run_all(jobs, timeout)

    def run_all(
        self,
        jobs: Sequence[tuple[int, list[str], dict[str, str]]],
        timeout: float,
        preexec: Sequence[Callable[[], None] | None] | None = None,
    ) -> list[tuple[int, str, str]]:
        """Start every job at once and wait for all. Output goes to files, not pipes: a
        chatty rank must never block on a full pipe while its peers wait for it. `preexec`:
        each job's preexec_fn (e.g. joining a throttled disk's cgroup before `ip netns exec`)."""
        files = [(tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+")) for _ in jobs]
        pre = preexec if preexec is not None else [None] * len(jobs)
        procs = [
            self.popen(i, argv, env=env, stdout=fo, stderr=fe, preexec_fn=fn)
            for (i, argv, env), (fo, fe), fn in zip(jobs, files, pre)
        ]
        deadline = time.monotonic() + timeout
        while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
            if any(p.returncode not in (None, 0) for p in procs):
                deadline = min(deadline, time.monotonic() + FAIL_GRACE_S)
            time.sleep(0.1)
        out: list[tuple[int, str, str]] = []
        for p, (fo, fe) in zip(procs, files):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
                p.returncode = -9
            fo.seek(0)
            fe.seek(0)
            out.append((p.returncode, fo.read(), fe.read()))
            fo.close()
            fe.close()
        return out

    # -- link shaping -----------------------------------------------------------------
    # A node's send side is one HTB tree (`default 1`): class 1:1 is the node's rate (no
    # class 1:1 means unclassified traffic leaves unshaped), classes 1:10+ are shaped pairs
    # selected by a u32 filter on the peer's address. Its receive side is a tbf on the
    # bridge's port. So node and pair shaping combine: a slow pair inside a shaped fleet.
    def _htb(self, i: int) -> str:
        ns = self.namespaces[i]
        if i not in self._classes:
            run_tc(ns, "qdisc", "add", "dev", IFNAME, "root", "handle", "1:", "htb", "default", "1")
            self._classes[i] = 0
        return ns

    def shape_node(self, i: int, rate_mbit: float) -> None:
        """Node i sends and receives at most `rate_mbit` (pairs shaped lower stay lower)."""
        rate = f"{rate_mbit}mbit"
        verb = "change" if i in self._node_rate else "add"
        run_tc(
            self._htb(i),
            "class",
            verb,
            "dev",
            IFNAME,
            "parent",
            "1:",
            "classid",
            "1:1",
            "htb",
            "rate",
            rate,
            "ceil",
            rate,
            "burst",
            BURST,
            "cburst",
            BURST,
        )
        run_tc(
            self.switch,
            "qdisc",
            "replace",
            "dev",
            f"p{i}",
            "root",
            "handle",
            "1:",
            "tbf",
            "rate",
            rate,
            "burst",
            BURST,
            "latency",
            TBF_LATENCY,
        )
        self._node_rate[i] = rate_mbit

    def shape_pair(self, i: int, j: int, rate_mbit: float) -> None:
        """Only traffic between i and j, both directions: an HTB class at the rate on each
        end's send side, chosen by a u32 filter on the peer's address."""
        rate = f"{rate_mbit}mbit"
        for a, b in ((i, j), (j, i)):
            ns = self._htb(a)
            self._classes[a] += 1
            cls = f"1:{self._classes[a] + 9}"
            run_tc(
                ns,
                "class",
                "add",
                "dev",
                IFNAME,
                "parent",
                "1:",
                "classid",
                cls,
                "htb",
                "rate",
                rate,
                "ceil",
                rate,
                "burst",
                BURST,
                "cburst",
                BURST,
            )
            run_tc(
                ns,
                "filter",
                "add",
                "dev",
                IFNAME,
                "parent",
                "1:",
                "protocol",
                "ip",
                "prio",
                "1",
                "u32",
                "match",
                "ip",
                "dst",
                f"{self.addr(b)}/32",
                "flowid",
                cls,
            )

    def netem(self, i: int, delay_ms: float, loss_pct: float = 0.0) -> None:
        """Delay/loss on what node i sends (under its node rate when it has one)."""
        spec = ["netem", "delay", f"{delay_ms}ms", "loss", f"{loss_pct}%"]
        if i in self._node_rate:
            run_tc(
                self.namespaces[i], "qdisc", "replace", "dev", IFNAME, "parent", "1:1", "handle", "10:", *spec
            )
        elif i in self._classes:
            raise RuntimeError(f"node {i} has only pair shaping; shape the node first to add netem")
        else:
            run_tc(self.namespaces[i], "qdisc", "replace", "dev", IFNAME, "root", *spec)

    # -- measurement ------------------------------------------------------------------
    def tcp_goodput_bps(self, server: int, client: int, seconds: float = 2.0, port: int = 5201) -> float:
        """iperf3 TCP goodput (bits/s received) from `client` to `server`. Ports are private
        to each namespace, so the default port cannot collide with other clusters."""
        srv = self.popen(
            server,
            ["iperf3", "-s", "-1", "-p", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            for _ in range(50):
                r = self.run(
                    client,
                    ["iperf3", "-c", self.addr(server), "-p", str(port), "-t", str(seconds), "-J"],
                    timeout=seconds + 30,
                )
                # iperf3 3.12 exits 0 with -J even when it failed: the JSON says why.
                out = json.loads(r.stdout) if r.stdout.strip().startswith("{") else {}
                received = out.get("end", {}).get("sum_received")
                if received:
                    return float(received["bits_per_second"])
                time.sleep(0.1)  # server not listening yet
            raise RuntimeError(
                f"iperf3 {self.hosts[client]} -> {self.hosts[server]} failed: {r.stdout[-300:]}"
            )
        finally:
            if srv.poll() is None:
                srv.kill()
            srv.wait()
