"""launchers/local/preflight_relay.py: what a node without a shared results dir sends node 0
(its hello, its preflight output), read line by line; node 0's answer; and the relay itself on
loopback, its files read back by `stoker set-aside`'s own decision. Every expected value is
written out by hand; the preflight outputs are hand-written in the shape
launchers/commands/preflight.py prints."""

from __future__ import annotations

import os
import socket
import threading
import time
from pathlib import Path

import pytest

from launchers.local import preflight_relay as pr
from reports.shared import setaside

RUN = "torchrun-r1"


@pytest.mark.parametrize(
    "line,expected",
    [
        ("hello torchrun-r1 1 node-b\n", pr.Hello(1, "node-b")),
        ("hello torchrun-r1 2 node-c.example\n", pr.Hello(2, "node-c.example")),
        ("hello other-run 1 node-b\n", "run id 'other-run' is not this run's (torchrun-r1)"),
        ("hello torchrun-r1 0 node-a\n", "node rank '0' is outside 1..2"),
        ("hello torchrun-r1 3 node-d\n", "node rank '3' is outside 1..2"),
        ("hello torchrun-r1 x1 node-b\n", "node rank 'x1' is outside 1..2"),
        ("hello torchrun-r1 1 n[1-2]\n", "host name 'n[1-2]' is not one plain node name"),
        ("hello torchrun-r1 1\n", "not a preflight hello"),
        ("GET / HTTP/1.1\r\n", "not a preflight hello"),
        ("", "not a preflight hello"),
    ],
)
def test_a_hello_is_read_or_refused_with_its_reason(line: str, expected: pr.Hello | str) -> None:
    got = pr.parse_hello(line, RUN, 3)
    if isinstance(expected, pr.Hello):
        assert got == expected
    else:
        assert isinstance(got, str) and got.startswith(expected), got


@pytest.mark.parametrize(
    "line,expected",
    [
        ("log 0\n", 0),
        ("log 412\n", 412),
        ("log      412\n", 412),  # BSD wc's padding (hand-written)
        ("log 65536\n", 65536),  # MAX_LOG: 64 KiB, what torchrun.sh's `tail -c 65536` sends at most
        ("log 65537\n", "a log of 65537 bytes, more than 65536"),
        ("log -1\n", "not a preflight log header"),
        ("log ٣\n", "not a preflight log header"),  # a digit, but not an ASCII one
        ("log\n", "not a preflight log header"),
        ("", "not a preflight log header"),
    ],
)
def test_a_log_header_is_read_or_refused(line: str, expected: int | str) -> None:
    got = pr.parse_log_header(line)
    assert got == expected if isinstance(expected, int) else str(got).startswith(expected)


@pytest.mark.parametrize(
    "text,expected",
    [
        ("", None),
        ("node-a,node-b", None),  # being written: no newline yet
        ("node-a,node-b\n", "node-a,node-b"),
        ("STOP\n", "STOP"),
        ("\n", None),
    ],
)
def test_node_0s_answer_once_written_whole(text: str, expected: str | None) -> None:
    assert pr.go_line(text) == expected


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def node(port: int, hello: str, log: bytes | None, answers: list[str]) -> None:
    """One node as torchrun.sh speaks to the relay (hand-written here in python)."""
    with socket.create_connection(("127.0.0.1", port), timeout=20) as s, s.makefile("rb") as rf:
        s.sendall(hello.encode())
        reply = rf.readline().decode()
        answers.append(reply)
        if reply != "ok\n" or log is None:
            return
        s.sendall(f"log {len(log)}\n".encode() + log)
        answers.append(rf.readline().decode())


PASSED_B = b"stoker fingerprint: node-b abc123 /usr/bin/python3\ncheck ok\nstoker preflight: node-b passed\n"
BROKEN_C = b"python3: error while loading shared libraries: libpython3.so: cannot open shared object file\n"


def test_the_relay_writes_what_a_shared_dir_would_hold_and_sends_node_0s_answer(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    port = free_port()
    relay = pr.Relay(out, 4, RUN, port, time.monotonic() + 60)
    rc: list[int] = []
    server = threading.Thread(target=lambda: rc.append(relay.run(os.getppid())))
    server.start()
    said: dict[str, list[str]] = {k: [] for k in ("b", "c", "twin", "stranger")}
    clients = [
        threading.Thread(target=node, args=(port, f"hello {RUN} 1 node-b\n", PASSED_B, said["b"])),
        threading.Thread(target=node, args=(port, f"hello {RUN} 2 node-c\n", BROKEN_C, said["c"])),
    ]
    for t in clients:
        t.start()
    # both heard and their logs kept (.stoker-pf-R): they wait for node 0's answer
    deadline = time.monotonic() + 20
    while not (out / ".stoker-pf-2").exists() or not (out / ".stoker-pf-1").exists():
        assert time.monotonic() < deadline, sorted(p.name for p in out.iterdir())
        time.sleep(0.05)
    # a second node claiming rank 1, and one of another run, are refused with the reason
    node(port, f"hello {RUN} 1 node-b2\n", None, said["twin"])
    node(port, "hello other-run 3 node-d\n", None, said["stranger"])
    assert said["twin"] == ["stop node rank 1 already answered from node-b\n"]
    assert said["stranger"][0].startswith("stop run id 'other-run' is not this run's (torchrun-r1)")
    # the files torchrun.sh's node 0 reads from a shared OUT
    assert (out / ".stoker-seen-1").read_text() == "node-b\n"
    assert (out / ".stoker-seen-2").read_text() == "node-c\n"
    assert not (out / ".stoker-seen-3").exists()
    assert (out / "preflight" / "node-b.log").read_bytes() == PASSED_B
    assert (out / "preflight" / "node-c.log").read_bytes() == BROKEN_C
    # node 0's own output (written by torchrun.sh itself), then its set-aside decision: node-c
    # with its loader line, node-d (rank 3, never heard) with no output; node-b goes on
    (out / "preflight" / "node-a.log").write_text("stoker preflight: node-a passed\n")
    aside = setaside.gather(out, ["node-a", "node-b", "node-c", "node-d"])
    assert aside == [
        setaside.SetAside("node-c", BROKEN_C.decode().strip()),
        setaside.SetAside("node-d", setaside.NO_ANSWER),
    ]
    (out / ".stoker-go").write_text("node-a,node-b\n")
    for t in clients:
        t.join(timeout=20)
    server.join(timeout=20)
    assert rc == [0]
    assert said["b"] == ["ok\n", "go node-a,node-b\n"]
    assert said["c"] == ["ok\n", "go node-a,node-b\n"]


def test_a_log_already_there_is_never_overwritten(tmp_path: Path) -> None:
    (tmp_path / "preflight").mkdir()
    mine = tmp_path / "preflight" / "node-a.log"
    mine.write_text("node 0's own output\n")
    assert not pr.keep_log(tmp_path, pr.Hello(1, "node-a"), b"a twin's output\n")
    assert mine.read_text() == "node 0's own output\n"
    assert (tmp_path / ".stoker-pf-1").exists()  # its preflight ended; the name check stops the run


def test_no_answer_by_the_deadline_ends_the_relay_with_3(tmp_path: Path) -> None:
    relay = pr.Relay(tmp_path, 2, RUN, free_port(), time.monotonic() + 0.5)
    assert relay.run(os.getppid()) == 3


def test_a_port_in_use_is_one_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("STOKER_RUN_ID", RUN)
    with socket.create_server(("", 0)) as taken:
        port = taken.getsockname()[1]
        rc = pr.main([str(tmp_path), "--nnodes", "3", "--port", str(port), "--wait", "5"])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1, err
    assert f"node 0 cannot listen on PREFLIGHT_PORT={port}" in err
    assert not (tmp_path / pr.READY).exists()  # node 0's script stops: nothing listens


def test_no_run_id_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("STOKER_RUN_ID", raising=False)
    assert pr.main([str(tmp_path), "--nnodes", "3", "--port", str(free_port()), "--wait", "5"]) == 2
    assert "needs STOKER_RUN_ID" in capsys.readouterr().err
