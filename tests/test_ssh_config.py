"""workbench.hosts._sshconfig: alias resolution from OpenSSH config text (no server needed)."""

from __future__ import annotations

import getpass
import os
from pathlib import Path

import paramiko.config
import pytest

from workbench.errors import ConfigError
from workbench.hosts import SSHHost
from workbench.hosts._sshconfig import SSHTarget, connection_chain, load_config, parse_jump, resolve

CONFIG = """
Host gpu
    HostName 10.1.2.3
    Port 2222
    User alice
    IdentityFile ~/keys/id_gpu
    IdentitiesOnly yes
    ProxyJump bastion
    ServerAliveInterval 15
    ConnectTimeout 7
    UserKnownHostsFile /etc/wb/known_a /etc/wb/known_b
    StrictHostKeyChecking accept-new

Host bastion
    HostName bastion.example.org
    User jump

Host loop1
    ProxyJump loop2
Host loop2
    ProxyJump loop1

Host legacy
    ProxyCommand nc %h %p
"""


def _config(tmp_path: Path, text: str = CONFIG) -> Path:
    path = tmp_path / "ssh_config"
    path.write_text(text)
    return path


def test_resolves_every_supported_option(tmp_path: Path) -> None:
    target = resolve("gpu", config=load_config(_config(tmp_path)))
    assert target == SSHTarget(
        alias="gpu",
        hostname="10.1.2.3",
        port=2222,
        user="alice",
        identity_files=(os.path.expanduser("~/keys/id_gpu"),),
        identities_only=True,
        proxy_jump=("bastion",),
        server_alive_interval_s=15.0,
        connect_timeout_s=7.0,
        user_known_hosts=("/etc/wb/known_a", "/etc/wb/known_b"),
        global_known_hosts=("/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2"),
        host_key_alias=None,
        strict_host_key_checking="accept-new",
    )
    assert target.host_key_name == "[10.1.2.3]:2222" and target.describe() == "gpu (alice@10.1.2.3:2222)"


def test_unknown_alias_is_a_plain_hostname_with_openssh_defaults(tmp_path: Path) -> None:
    target = resolve("node7", config=load_config(_config(tmp_path)))
    assert (target.hostname, target.port, target.user, target.proxy_jump) == ("node7", 22, getpass.getuser(), ())
    defaults = ("~/.ssh/known_hosts", "~/.ssh/known_hosts2")
    assert target.user_known_hosts == tuple(os.path.expanduser(f) for f in defaults)
    assert target.host_key_name == "node7" and target.strict_host_key_checking == "yes"
    assert resolve("n", config=load_config(_config(tmp_path, "Host n\n HostKeyAlias box\n"))).host_key_name == "box"


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("host", (None, "host", None)),
        ("me@host", ("me", "host", None)),
        ("me@host:2200", ("me", "host", 2200)),
        ("ssh://me@host:2200", ("me", "host", 2200)),
        ("[::1]:2200", (None, "::1", 2200)),
        ("a@b@host", ("a@b", "host", None)),
    ],
)
def test_parse_jump(spec: str, expected: tuple) -> None:
    assert parse_jump(spec) == expected


def test_parse_jump_rejects_a_bad_port() -> None:
    with pytest.raises(ConfigError, match="not a number"):
        parse_jump("host:ssh")


def test_connection_chain_resolves_hops_in_the_same_config(tmp_path: Path) -> None:
    config = load_config(_config(tmp_path))
    chain = connection_chain("gpu", config=config)
    assert [(t.alias, t.hostname, t.user) for t in chain] == [
        ("bastion", "bastion.example.org", "jump"),
        ("gpu", "10.1.2.3", "alice"),
    ]
    with pytest.raises(ConfigError, match="loop"):
        connection_chain("loop1", config=config)


def test_proxy_command_is_refused_with_a_hint(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="ProxyJump"):
        resolve("legacy", config=load_config(_config(tmp_path)))


@pytest.mark.parametrize("alias", ["", "-oProxyCommand=x", "two words"])
def test_malformed_aliases_are_refused(alias: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        resolve(alias, config=load_config(_config(tmp_path)))


def test_include_files_are_inlined(tmp_path: Path) -> None:
    (tmp_path / "conf.d").mkdir()
    (tmp_path / "conf.d" / "10-gpu").write_text("Host inc\n    HostName 10.9.9.9\n    Port 2022\n")
    main = _config(tmp_path, f"Include {tmp_path}/conf.d/*\nHost other\n    Port 1\n")
    target = resolve("inc", config=load_config(main))
    assert (target.hostname, target.port) == ("10.9.9.9", 2022)


def test_config_file_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="Cannot read ssh config"):
        load_config(tmp_path / "missing")
    with pytest.raises(ConfigError, match="Port 'abc' is not a number"):
        resolve("x", config=load_config(_config(tmp_path, "Host x\n    Port abc\n")))
    monkeypatch.setenv("HOME", str(tmp_path / "empty-home"))
    monkeypatch.delenv("WORKBENCH_SSH_CONFIG", raising=False)
    assert resolve("anywhere", config=load_config()).hostname == "anywhere"  # no ~/.ssh/config: defaults


def test_ssh_host_is_lazy_and_takes_its_defaults_from_the_config(tmp_path: Path) -> None:
    host = SSHHost("gpu", config_file=_config(tmp_path))  # 10.1.2.3 is never contacted here
    assert (host.keepalive_s, host.connect_timeout_s, host.connected) == (15.0, 7.0, False)
    assert [t.alias for t in host.chain] == ["bastion", "gpu"]
    tuned = SSHHost("gpu", config_file=_config(tmp_path), keepalive_s=0, connect_timeout_s=3)
    assert (tuned.keepalive_s, tuned.connect_timeout_s) == (0, 3)
    assert SSHHost("plain", config_file=_config(tmp_path)).keepalive_s == 30.0
    host.close()


def test_match_exec_without_invoke_is_a_config_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # paramiko evaluates `Match exec` with the optional `invoke` package; simulate it missing.
    monkeypatch.setattr(paramiko.config, "invoke", None)
    monkeypatch.setattr(paramiko.config, "invoke_import_error", ImportError("No module named 'invoke'"))
    config = load_config(_config(tmp_path, 'Match exec "true"\n    Port 2200\n'))
    with pytest.raises(ConfigError, match="Match exec.*invoke"):
        resolve("x", config=config)
