"""A real OpenSSH server on 127.0.0.1 for the SSH tests (session-scoped pytest fixture).

Starts ``/usr/sbin/sshd -D -e -f <generated sshd_config>`` on a free port with a
throwaway host key and user key (made by ``ssh-keygen`` in a temp dir), running as
the current user, plus an ssh config with the alias ``wbtest`` and a known_hosts
file holding the host key. Nothing under the real ``~/.ssh`` is read or written.

Use it from a test module with::

    from sshd_fixture import ssh_host, sshd  # noqa: F401  (pytest fixtures)

When sshd is missing the tests FAIL (never skip): install Debian's openssh-server.
"""

from __future__ import annotations

import contextlib
import dataclasses
import getpass
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from workbench.hosts import LocalHost
from workbench.hosts._ssh import SSHHost

SSHD_BINARY = "/usr/sbin/sshd"
ALIAS = "wbtest"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclasses.dataclass
class SSHD:
    """A running test sshd and the client-side files that reach it.

    Attributes:
        alias: ssh config alias for the server (``wbtest``).
        config_file: ssh config holding ``alias`` (pass as ``config_file=``).
        known_hosts: known_hosts file with the server's host key.
        port: the server's port on 127.0.0.1.
        host_key_line: ``type base64`` of the server's public host key.
        identity_file: the authorised user key.
        workdir: temp directory holding all of it.
        log_file: sshd's log (``-e`` output).
    """

    alias: str
    config_file: Path
    known_hosts: Path
    port: int
    host_key_line: str
    identity_file: Path
    workdir: Path
    log_file: Path
    proc: subprocess.Popen

    def options(self, **overrides: str) -> dict[str, str]:
        """ssh config options of the ``wbtest`` alias, with ``overrides`` (``None`` drops one)."""
        opts = client_options("127.0.0.1", self.port, self.identity_file, self.known_hosts)
        opts.update(overrides)
        return {k: v for k, v in opts.items() if v is not None}

    def write_config(self, name: str, hosts: dict[str, dict[str, str]]) -> Path:
        """Write an ssh config file ``name`` in the workdir with one ``Host`` block per alias."""
        path = self.workdir / name
        path.write_text(config_text(hosts))
        return path

    def log_tail(self, chars: int = 3000) -> str:
        return self.log_file.read_text(errors="replace")[-chars:]


def _keygen(path: Path) -> str:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "workbench-test", "-f", str(path)],
        check=True,
        capture_output=True,
    )
    return " ".join(path.with_suffix(".pub").read_text().split()[:2])


def prepare_workdir(work: Path) -> Path:
    """Make ``work`` (mode 0700, created if missing) with a user key, the one key ``authorized_keys`` lists;
    as root, also sshd's privilege-separation folder. Returns the user key's path (the client's identity)."""
    work.mkdir(parents=True, exist_ok=True)
    work.chmod(0o700)
    identity = work / "id_ed25519"
    (work / "authorized_keys").write_text(_keygen(identity) + "\n")
    if os.geteuid() == 0:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege-separation dir
    return identity


#: The sshd options every test server runs with: keys only, as the current user (root allowed), port
#: forwarding and sftp on, room for the many sessions and channels a sweep opens.
SSHD_OPTIONS = (
    "PermitRootLogin yes",
    "StrictModes no",
    "UsePAM no",
    "PasswordAuthentication no",
    "KbdInteractiveAuthentication no",
    "PubkeyAuthentication yes",
    "AllowTcpForwarding yes",
    "Subsystem sftp internal-sftp",
    "MaxSessions 64",
    "MaxStartups 64:30:128",
    "PrintMotd no",
)


def sshd_config_text(
    work: Path, *, port: int, address: str, host_key: Path, pid_file: Path, extra: tuple[str, ...]
) -> str:
    """An sshd_config listening on ``address``:``port`` with ``host_key``, authorising ``work``'s
    ``authorized_keys`` (:func:`prepare_workdir`), with :data:`SSHD_OPTIONS` and then ``extra`` lines."""
    head = [
        f"Port {port}",
        f"ListenAddress {address}",
        f"HostKey {host_key}",
        f"PidFile {pid_file}",
        f"AuthorizedKeysFile {work / 'authorized_keys'}",
    ]
    return "\n".join([*head, *SSHD_OPTIONS, *extra]) + "\n"


def client_options(hostname: str, port: int, identity: Path, known_hosts: Path) -> dict[str, str]:
    """The ssh config options that reach a test sshd at ``hostname``:``port`` with ``identity`` only, checking
    its host key against ``known_hosts`` alone (nothing under ``~/.ssh`` or /etc/ssh is read)."""
    return {
        "HostName": hostname,
        "Port": str(port),
        "User": getpass.getuser(),
        "IdentityFile": str(identity),
        "IdentitiesOnly": "yes",
        "UserKnownHostsFile": str(known_hosts),
        "GlobalKnownHostsFile": "/dev/null",
    }


def config_text(hosts: Mapping[str, Mapping[str, str]]) -> str:
    """An ssh config: one ``Host`` block per alias, its options indented below it."""
    lines = []
    for alias, opts in hosts.items():
        lines.append(f"Host {alias}")
        lines.extend(f"    {key} {value}" for key, value in opts.items())
    return "\n".join(lines) + "\n"


def _wait_for_banner(port: int, proc: subprocess.Popen, log_file: Path, timeout_s: float = 15.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"sshd exited with status {proc.returncode} at start:\n{log_file.read_text()[-3000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                if s.recv(64).startswith(b"SSH-2.0"):
                    return
        except OSError:
            time.sleep(0.05)
    pytest.fail(f"sshd did not answer on 127.0.0.1:{port} within {timeout_s} s:\n{log_file.read_text()[-3000:]}")


@contextlib.contextmanager
def running_sshd(work: Path) -> Iterator[SSHD]:
    """Start sshd with its keys and configs in ``work`` (made if missing); stop it on exit.

    Also usable outside pytest (``benchmarks/source_lookup_latency.py``); a failure to
    start raises pytest's ``Failed`` with sshd's log.
    """
    if not os.access(SSHD_BINARY, os.X_OK) or shutil.which("ssh-keygen") is None:
        pytest.fail(
            f"{SSHD_BINARY} or ssh-keygen not found: the SSH tests need a real OpenSSH server. "
            "Install it with `apt-get install -y openssh-server` (as root), then run the tests again."
        )
    identity = prepare_workdir(work)
    host_key = work / "host_ed25519"
    host_key_line = _keygen(host_key)
    port = free_port()
    sshd_config = work / "sshd_config"
    sshd_config.write_text(
        sshd_config_text(
            work,
            port=port,
            address="127.0.0.1",
            host_key=host_key,
            pid_file=work / "sshd.pid",
            extra=("LogLevel VERBOSE",),
        )
    )
    log_file = work / "sshd.log"
    with open(log_file, "wb") as log:
        proc = subprocess.Popen(
            [SSHD_BINARY, "-D", "-e", "-f", str(sshd_config)], stdout=log, stderr=log, stdin=subprocess.DEVNULL
        )
    try:
        _wait_for_banner(port, proc, log_file)
        known_hosts = work / "known_hosts"
        known_hosts.write_text(f"[127.0.0.1]:{port} {host_key_line}\n")
        server = SSHD(
            alias=ALIAS,
            config_file=work / "ssh_config",
            known_hosts=known_hosts,
            port=port,
            host_key_line=host_key_line,
            identity_file=identity,
            workdir=work,
            log_file=log_file,
            proc=proc,
        )
        server.write_config("ssh_config", {ALIAS: server.options()})
        yield server
    finally:
        stop_process(proc)


def stop_process(proc: subprocess.Popen, timeout_s: float = 10.0) -> None:
    """SIGTERM ``proc`` (an sshd this module or tests/fleet_sshd.py started), SIGKILL after ``timeout_s``."""
    proc.terminate()
    try:
        proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SSHD]:
    """A running sshd on 127.0.0.1 with a ``wbtest`` alias in its own ssh config (see module doc)."""
    with running_sshd(tmp_path_factory.mktemp("sshd")) as server:
        yield server


@pytest.fixture
def ssh_host(sshd: SSHD) -> Iterator[SSHHost]:
    """An :class:`SSHHost` for the ``wbtest`` alias, closed after the test."""
    host = SSHHost(sshd.alias, config_file=sshd.config_file)
    try:
        yield host
    finally:
        host.close()


@pytest.fixture(params=["local", "ssh"])
def any_host(request: pytest.FixtureRequest, sshd: SSHD) -> Iterator[LocalHost | SSHHost]:
    """Each test twice: on this machine (:class:`LocalHost`) and through the real sshd (:class:`SSHHost`)."""
    if request.param == "local":
        yield LocalHost()
        return
    host = SSHHost(sshd.alias, config_file=sshd.config_file)
    try:
        yield host
    finally:
        host.close()
