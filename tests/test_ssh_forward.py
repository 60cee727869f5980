"""Port forwards and detached processes through SSHHost, against a real sshd and a real HTTP server."""

from __future__ import annotations

import concurrent.futures
import os
import socket
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from sshd_fixture import free_port, ssh_host, sshd  # noqa: F401  (pytest fixtures)

from workbench.hosts import Forward, LocalHost, SSHHost, processes
from workbench.hosts._base import SpawnedProcess


def _get(url: str, *, timeout_s: float = 10.0) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout_s) as resp:
        return resp.read()


def _wait_served(fwd: Forward, path: str, *, timeout_s: float = 15.0) -> bytes:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return _get(fwd.url(path), timeout_s=2)
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


@pytest.fixture
def http_server(ssh_host: SSHHost, tmp_path: Path) -> Iterator[tuple[SpawnedProcess, int, Path]]:
    """``python3 -m http.server`` on the host's 127.0.0.1, started through SSH; stopped afterwards."""
    root = tmp_path / "www"
    root.mkdir()
    (root / "hello.txt").write_text("hello through the tunnel\n")
    (root / "big.bin").write_bytes(os.urandom(5 * 1024 * 1024))
    port = free_port()
    proc = processes.spawn(
        ssh_host,
        ["python3", "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(root)],
        log_path=str(tmp_path / "logs" / "http.log"),
    )
    try:
        yield proc, port, root
    finally:
        processes.stop(ssh_host, proc, grace_s=5)


def test_forward_reaches_an_http_server_spawned_through_ssh(ssh_host: SSHHost, http_server) -> None:
    proc, port, root = http_server
    with ssh_host.forward(port) as fwd:
        assert fwd.local_port != 0 and fwd.remote_port == port
        assert _wait_served(fwd, "/hello.txt") == b"hello through the tunnel\n"
        assert _get(fwd.url("/big.bin")) == (root / "big.bin").read_bytes()
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            bodies = list(pool.map(lambda _: _get(fwd.url("/hello.txt")), range(16)))
        assert set(bodies) == {b"hello through the tunnel\n"}
        # A client that half-closes after its request still gets the whole answer.
        with socket.create_connection(("127.0.0.1", fwd.local_port), timeout=10) as s:
            s.sendall(b"GET /hello.txt HTTP/1.0\r\n\r\n")
            s.shutdown(socket.SHUT_WR)
            answer = b"".join(iter(lambda: s.recv(65536), b""))
        assert answer.startswith(b"HTTP/1.0 200") and answer.endswith(b"hello through the tunnel\n")
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", fwd.local_port), timeout=2).close()
    assert fwd.active_connections == 0


def test_spawned_process_outlives_the_connection_and_stop_leaves_nothing(ssh_host: SSHHost, http_server) -> None:
    proc, port, _ = http_server
    assert processes.is_alive(ssh_host, proc)
    ssh_host.close()  # the SSH session ends; the detached server must not
    assert processes.is_alive(ssh_host, proc)
    with ssh_host.forward(port) as fwd:
        assert _wait_served(fwd, "/hello.txt").startswith(b"hello")
    assert processes.stop(ssh_host, proc, grace_s=5) == "stopped"
    assert processes.group_members(ssh_host, proc.pgid) == []
    assert not processes.is_alive(ssh_host, proc)


def test_forward_to_a_closed_port_closes_the_client_and_keeps_serving(ssh_host: SSHHost, http_server) -> None:
    _, port, _ = http_server
    with ssh_host.forward(free_port()) as dead:
        with socket.create_connection(("127.0.0.1", dead.local_port), timeout=10) as s:
            s.settimeout(10)
            try:
                assert s.recv(1) == b""
            except ConnectionResetError:
                pass
    with ssh_host.forward(port) as fwd:
        assert _wait_served(fwd, "/hello.txt").startswith(b"hello")


def test_closing_the_host_closes_its_forwards(ssh_host: SSHHost) -> None:
    fwd = ssh_host.forward(ssh_host.target.port)
    ssh_host.close()
    assert fwd.closed
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", fwd.local_port), timeout=2).close()


def test_local_host_forward_is_the_port_itself() -> None:
    with LocalHost().forward(8123) as fwd:
        assert (fwd.local_host, fwd.local_port) == ("127.0.0.1", 8123)
        assert fwd.url("/health") == "http://127.0.0.1:8123/health"


def test_spawn_and_stop_over_ssh_with_children(ssh_host: SSHHost, tmp_path: Path) -> None:
    script = "sleep 60 & sleep 60 & wait"
    proc = processes.spawn(ssh_host, ["sh", "-c", script], log_path=str(tmp_path / "kids.log"))
    deadline = time.monotonic() + 5
    while len(processes.group_members(ssh_host, proc.pgid)) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(processes.group_members(ssh_host, proc.pgid)) == 3
    assert processes.stop(ssh_host, proc, grace_s=5) == "stopped"
    assert processes.group_members(ssh_host, proc.pgid) == []
