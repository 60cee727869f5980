"""SSHHost connections against a real sshd: host keys, auth, reachability, drops, keepalive, jumps."""

from __future__ import annotations

import os
import select
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest
from sshd_fixture import SSHD, free_port, ssh_host, sshd  # noqa: F401  (pytest fixtures)

from workbench.errors import ConnectionLost, HostAuthError, HostKeyError, HostUnreachable
from workbench.hosts import SSHHost


class IdleDropProxy:
    """A TCP proxy that closes a connection once no byte has crossed it for ``idle_s`` seconds.

    Stands in for a NAT or firewall that forgets idle flows.

    Attributes:
        port: where it listens on 127.0.0.1.
        drops: connections closed for idleness so far.
    """

    def __init__(self, upstream_port: int, *, idle_s: float) -> None:
        self.upstream_port = upstream_port
        self.idle_s = idle_s
        self.drops = 0
        self._frozen_at = float("inf")
        self._server = socket.create_server(("127.0.0.1", 0))
        self._server.settimeout(0.1)
        self.port = self._server.getsockname()[1]
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._accept, daemon=True)]
        self._threads[0].start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                client, _ = self._server.accept()
            except socket.timeout:
                continue
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            thread = threading.Thread(target=self._pump, args=(client, upstream), daemon=True)
            self._threads.append(thread)
            thread.start()

    def freeze(self) -> None:
        """Stop passing bytes on the connections open now, without closing them (a black hole)."""
        self._frozen_at = time.monotonic()

    def _pump(self, a: socket.socket, b: socket.socket) -> None:
        last = started = time.monotonic()
        try:
            while not self._stop.is_set():
                if started < self._frozen_at < time.monotonic():
                    time.sleep(0.05)
                    continue
                ready, _, _ = select.select([a, b], [], [], 0.05)
                for sock in ready:
                    data = sock.recv(65536)
                    if not data:
                        return
                    (b if sock is a else a).sendall(data)
                    last = time.monotonic()
                if time.monotonic() - last > self.idle_s:
                    self.drops += 1
                    return
        except OSError:
            return
        finally:
            a.close()
            b.close()

    def close(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(2)
        self._server.close()


def _host(sshd: SSHD, tmp_path: Path, alias: str, **options) -> SSHHost:
    kwargs = {k: options.pop(k) for k in ("known_hosts", "trust_on_first_use", "keepalive_s") if k in options}
    config = sshd.write_config(f"config-{tmp_path.name}", {alias: sshd.options(**options)})
    return SSHHost(alias, config_file=config, **kwargs)


def test_unknown_host_key_is_refused_with_instructions(sshd: SSHD, tmp_path: Path) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    host = SSHHost(sshd.alias, config_file=sshd.config_file, known_hosts=empty)
    with pytest.raises(HostKeyError) as info:
        host.run(["true"])
    message = str(info.value)
    assert "unknown" in message and sshd.alias in message
    assert f"ssh-keyscan -p {sshd.port} 127.0.0.1 >> {empty}" in message
    assert "trust_on_first_use=True" in message and "SHA256:" in message
    assert empty.read_text() == "", "an unknown key must never be recorded silently"
    assert not host.connected


def test_trust_on_first_use_records_the_key(sshd: SSHD, tmp_path: Path) -> None:
    known = tmp_path / "sub" / "known_hosts"
    with SSHHost(sshd.alias, config_file=sshd.config_file, known_hosts=known, trust_on_first_use=True) as host:
        assert host.run(["echo", "ok"]).stdout == "ok\n"
    assert known.read_text() == f"[127.0.0.1]:{sshd.port} {sshd.host_key_line}\n"
    assert oct(known.stat().st_mode & 0o777) == oct(0o600)
    with SSHHost(sshd.alias, config_file=sshd.config_file, known_hosts=known) as again:
        assert again.run(["echo", "ok"]).stdout == "ok\n"
    assert known.read_text().count("\n") == 1


def test_changed_host_key_is_refused_even_with_trust_on_first_use(sshd: SSHD, tmp_path: Path) -> None:
    other = tmp_path / "other"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    known = tmp_path / "known_hosts"
    known.write_text(f"[127.0.0.1]:{sshd.port} {other.with_suffix('.pub').read_text()}")
    host = SSHHost(sshd.alias, config_file=sshd.config_file, known_hosts=known, trust_on_first_use=True)
    with pytest.raises(HostKeyError) as info:
        host.connect()
    assert "CHANGED" in str(info.value) and f"ssh-keygen -R '[127.0.0.1]:{sshd.port}'" in str(info.value)


def test_accept_new_in_the_config_records_an_unknown_key(sshd: SSHD, tmp_path: Path) -> None:
    known = tmp_path / "known_hosts"
    host = _host(sshd, tmp_path, "wbnew", UserKnownHostsFile=str(known), StrictHostKeyChecking="accept-new")
    with host:
        host.connect()
    assert sshd.host_key_line in known.read_text()


def test_authentication_failure_says_what_to_do(sshd: SSHD, tmp_path: Path) -> None:
    stranger = tmp_path / "id_stranger"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(stranger)], check=True)
    host = _host(sshd, tmp_path, "wbauth", IdentityFile=str(stranger))
    with pytest.raises(HostAuthError) as info:
        host.run(["true"])
    assert str(stranger) in str(info.value) and "ssh wbauth" in str(info.value)


def test_unreachable_host_is_reported(sshd: SSHD, tmp_path: Path) -> None:
    host = _host(sshd, tmp_path, "wbdown", Port=str(free_port()))
    with pytest.raises(HostUnreachable) as info:
        host.run(["true"])
    assert "wbdown" in str(info.value) and "Connection refused" in str(info.value)


def test_one_connection_serves_commands_files_and_forwards(ssh_host: SSHHost, tmp_path: Path) -> None:
    # Every command's parent is the one sshd process that serves this connection.
    parents = {ssh_host.run("echo $PPID").stdout for _ in range(3)}
    conn = ssh_host._conn
    ssh_host.write_bytes(str(tmp_path / "f"), b"x")
    with ssh_host.forward(ssh_host.target.port) as fwd:
        with socket.create_connection(("127.0.0.1", fwd.local_port), timeout=5) as s:
            assert s.recv(8) == b"SSH-2.0-"  # sshd's banner, reached through the tunnel
    assert ssh_host._conn is conn and len(parents) == 1


def test_reconnects_after_the_server_drops_the_connection(ssh_host: SSHHost) -> None:
    first = ssh_host._connection()
    session = int(ssh_host.run("echo $PPID").stdout)  # the sshd process serving this connection
    os.kill(session, 9)
    assert ssh_host.run(["echo", "back"]).stdout == "back\n"
    assert ssh_host._conn is not first and not first.active


def test_drop_while_a_command_runs_is_a_clear_error_then_reconnects(ssh_host: SSHHost) -> None:
    with pytest.raises(ConnectionLost) as info:
        ssh_host.run("kill -9 $PPID; sleep 2", timeout_s=20)
    assert str(info.value).startswith("Connection to host wbtest (")
    assert "dropped" in str(info.value) and "may still be running" in str(info.value)
    assert info.value.result.exit_status == -1 and "kill -9" in info.value.result.command
    assert ssh_host.run(["echo", "again"]).stdout == "again\n"


def test_keepalive_survives_an_idle_dropping_proxy(sshd: SSHD, tmp_path: Path) -> None:
    proxy = IdleDropProxy(sshd.port, idle_s=2.0)
    try:
        host = _host(
            sshd, tmp_path, "wbidle", Port=str(proxy.port), HostKeyAlias=f"[127.0.0.1]:{sshd.port}", keepalive_s=0.5
        )
        with host:
            res = host.run(["sleep", "5"], timeout_s=30)
            assert res.ok and res.duration_s >= 5
            conn = host._conn
            assert host.run(["echo", "still"]).stdout == "still\n" and host._conn is conn
        assert proxy.drops == 0
    finally:
        proxy.close()


def test_without_keepalive_the_proxy_drops_a_silent_command(sshd: SSHD, tmp_path: Path) -> None:
    proxy = IdleDropProxy(sshd.port, idle_s=2.0)
    try:
        host = _host(
            sshd, tmp_path, "wbnokeep", Port=str(proxy.port), HostKeyAlias=f"[127.0.0.1]:{sshd.port}", keepalive_s=0
        )
        with host:
            with pytest.raises(ConnectionLost):
                host.run(["sleep", "6"], timeout_s=30)
            assert proxy.drops == 1
            assert host.run(["echo", "reconnected"]).stdout == "reconnected\n"
    finally:
        proxy.close()


def test_a_host_that_stops_answering_is_detected_by_keepalive(sshd: SSHD, tmp_path: Path) -> None:
    proxy = IdleDropProxy(sshd.port, idle_s=60.0)
    try:
        host = _host(
            sshd, tmp_path, "wbhole", Port=str(proxy.port), HostKeyAlias=f"[127.0.0.1]:{sshd.port}", keepalive_s=0.5
        )
        with host:
            host.connect()
            threading.Timer(0.5, proxy.freeze).start()
            start = time.monotonic()
            with pytest.raises(ConnectionLost) as info:
                host.run(["sleep", "8"], timeout_s=30)
            # frozen at 0.5 s, silent for 3 x 0.5 s: about 2 s. The bound leaves a loaded machine 5 s more and
            # stays under the 8 s sleep and far under the 30 s timeout, the two ways it ends without keepalives
            assert time.monotonic() - start < 7.5
            assert "stopped answering keepalives" in str(info.value)
            assert host.run(["echo", "fresh"]).stdout == "fresh\n"  # a new connection
    finally:
        proxy.close()


def test_proxy_jump_through_the_same_server(sshd: SSHD, tmp_path: Path) -> None:
    config = sshd.write_config(
        "config-jump",
        {
            "wbjump": sshd.options(ProxyJump=f"{os.environ.get('USER', 'root')}@127.0.0.1:{sshd.port},wbhop"),
            "wbhop": sshd.options(),
            "127.0.0.1": sshd.options(Port=None),
        },
    )
    with SSHHost("wbjump", config_file=config) as host:
        assert [t.alias for t in host.chain] == ["127.0.0.1", "wbhop", "wbjump"]
        assert host.run(["echo", "jumped"]).stdout == "jumped\n"
        assert len(host._conn.clients) == 3
        assert host.read_bytes(str(sshd.known_hosts)) == sshd.known_hosts.read_bytes()
