"""SSHHost commands against a real sshd: exit status, streams, stdin, timeouts, quoting."""

from __future__ import annotations

import shlex
import time
from pathlib import Path

import pytest
from sshd_fixture import SSHD, ssh_host, sshd  # noqa: F401  (pytest fixtures)

from workbench.errors import CommandError, CommandTimeout
from workbench.hosts import SSHHost, get_host

#: Values that a shell would act on if they were not quoted as data.
HOSTILE = [
    "two words",
    "it's",
    'say "hi"',
    "semi;colon; touch PWNED_SEMI",
    "$(touch PWNED_SUBST)",
    "`touch PWNED_BACKTICK`",
    "line one\nline two; touch PWNED_NEWLINE",
    "back\\slash\\n",
    "glob*?[a]",
    "~",
    "$HOME ${HOME}",
    "-n",
    "",
    "pipe | touch PWNED_PIPE && amp & redirect > PWNED_REDIRECT",
    "tab\tand 'mixed' \"quotes\" $((1+1)) !bang #hash",
]


def _gone(pid: int) -> bool:
    """True when ``pid`` no longer runs on this machine (absent, or a zombie nobody reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[-1].split()[0] in ("Z", "X")


def test_echo_and_exit_status(ssh_host: SSHHost) -> None:
    res = ssh_host.run(["echo", "hello", "world"])
    assert res.ok and res.stdout == "hello world\n" and res.stderr == ""
    assert res.host == "wbtest" and res.command == "echo hello world" and res.duration_s > 0
    res = ssh_host.run("echo out; echo err >&2; exit 7", check=False)
    assert (res.exit_status, res.stdout, res.stderr) == (7, "out\n", "err\n")
    with pytest.raises(CommandError) as info:
        ssh_host.run(["sh", "-c", "echo broken pipe >&2; exit 3"])
    assert info.value.result.exit_status == 3
    message = str(info.value)
    assert "wbtest" in message and "exited 3" in message and "broken pipe" in message


def test_runs_posix_sh_with_env_cwd_and_stdin(ssh_host: SSHHost, tmp_path: Path) -> None:
    res = ssh_host.run(["sh", "-c", 'printf "%s|%s" "$A" "$(pwd)"'], env={"A": "x y"}, cwd=str(tmp_path))
    assert res.stdout == f"x y|{tmp_path}"
    data = bytes(range(256)) * 1000
    res = ssh_host.run(["sh", "-c", "wc -c"], stdin=data)
    assert res.stdout.strip() == str(len(data))
    # No stdin: the command sees EOF at once instead of hanging.
    assert ssh_host.run(["cat"], timeout_s=10).stdout == ""


def test_ten_mib_on_both_streams_does_not_deadlock(ssh_host: SSHHost) -> None:
    code = (
        "import sys\n"
        "o, e = sys.stdout.buffer, sys.stderr.buffer\n"
        "for i in range(160):\n"
        "    o.write(b'o' * 65536); o.flush(); e.write(b'e' * 65536); e.flush()\n"
    )
    start = time.monotonic()
    res = ssh_host.run(["python3", "-c", code], timeout_s=60)
    assert len(res.stdout) == len(res.stderr) == 10 * 1024 * 1024
    assert set(res.stdout) == {"o"} and set(res.stderr) == {"e"}
    assert time.monotonic() - start < 30


def test_timeout_kills_the_remote_command_and_its_children(ssh_host: SSHHost, tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    line = f"sleep 30 & echo $! > {shlex.quote(str(pids))}; echo $$ >> {shlex.quote(str(pids))}; wait"
    start = time.monotonic()
    with pytest.raises(CommandTimeout) as info:
        ssh_host.run(line, timeout_s=1.0)
    # the 1 s timeout, then the kill and its reply over SSH: well under the 30 s the command would take,
    # with room for a loaded machine (it took 1.1-1.5 s quiet)
    assert time.monotonic() - start < 15
    result = info.value.result
    assert result.timed_out and result.exit_status == -9 and "timed out" in str(info.value)
    started = [int(p) for p in pids.read_text().split()]
    assert len(started) == 2
    deadline = time.monotonic() + 15  # the remote side's kill lands at once; slack for a loaded machine
    while not all(_gone(pid) for pid in started) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(_gone(pid) for pid in started), f"still running: {started}"
    # The connection is still good afterwards.
    assert ssh_host.run(["echo", "after"]).stdout == "after\n"


def test_hostile_arguments_are_data(ssh_host: SSHHost, tmp_path: Path) -> None:
    res = ssh_host.run(["printf", "%s\\0", *HOSTILE], cwd=str(tmp_path))
    assert res.stdout.split("\0")[:-1] == HOSTILE
    res = ssh_host.run(["sh", "-c", 'printf "%s" "$V"'], env={"V": HOSTILE[-1] + HOSTILE[6]}, cwd=str(tmp_path))
    assert res.stdout == HOSTILE[-1] + HOSTILE[6]
    assert list(tmp_path.iterdir()) == [], "a hostile value was executed"


def test_hostile_paths_are_data(ssh_host: SSHHost, tmp_path: Path) -> None:
    weird = tmp_path / "dir with 'quote' \"dq\" $(touch PWNED) `touch PWNED2`; touch PWNED3\nnl"
    target = weird / "file;$(id).txt"
    ssh_host.run(["mkdir", "-p", str(weird)], cwd=str(tmp_path))
    ssh_host.run(["sh", "-c", 'printf payload > "$1"', "sh", str(target)], cwd=str(tmp_path))
    assert target.read_text() == "payload"
    assert ssh_host.run(["cat", str(target)], cwd=str(weird)).stdout == "payload"
    assert sorted(p.name for p in tmp_path.iterdir()) == [weird.name]
    assert [p.name for p in weird.iterdir()] == [target.name]


def test_get_host_resolves_an_alias_to_one_shared_ssh_host(sshd: SSHD) -> None:
    host = get_host(sshd.alias, config_file=sshd.config_file)
    try:
        assert isinstance(host, SSHHost) and host.name == sshd.alias
        assert get_host(sshd.alias, config_file=str(sshd.config_file)) is host
        assert host.target.port == sshd.port and host.target.hostname == "127.0.0.1"
        assert host.run(["echo", "via get_host"]).stdout == "via get_host\n"
    finally:
        host.close()
    assert get_host("local").name == "local"


def test_workbench_ssh_config_names_the_default_config(sshd: SSHD, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_SSH_CONFIG", str(sshd.config_file))
    host = get_host(sshd.alias)
    try:
        assert host is get_host(sshd.alias, config_file=sshd.config_file)
        assert host.run(["echo", "env config"]).stdout == "env config\n"
    finally:
        host.close()
