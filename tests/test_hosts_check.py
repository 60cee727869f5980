"""`workbench host check` against a real sshd: what it learns, and the hosts it cannot use."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sshd_fixture import SSHD, free_port, sshd  # noqa: F401  (pytest fixture)
from typer.testing import CliRunner

from workbench.cli import app
from workbench.errors import ConfigError
from workbench.hosts import check_host, parse_requirements, render_check
from workbench.hosts._check import HostReport

PY = sys.executable
runner = CliRunner()


def _check(sshd: SSHD, *args: str, alias: str | None = None, config: Path | None = None):  # noqa: F811
    return runner.invoke(app, ["host", "check", alias or sshd.alias, "-F", str(config or sshd.config_file), *args])


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    root = tmp_path / "sglang"
    (root / "python" / "sglang").mkdir(parents=True)
    (root / "python" / "sglang" / "__init__.py").write_text("")
    (root / "python" / "sglang" / "version.py").write_text('__version__ = "0.5.9"\n')
    env = dict(
        os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@x", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@x"
    )
    for args in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-q", "-m", "v0.5.9"]):
        subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, env=env)
    return root


def test_host_check_on_the_alias(sshd: SSHD, checkout: Path) -> None:  # noqa: F811
    result = _check(sshd, "--python", PY, "--sglang-path", str(checkout))
    assert result.exit_code == 0, result.output
    out = result.output
    assert f"host      {sshd.alias}: reachable" in out
    assert f"python    {PY} (3." in out
    assert f"sglang    not installed for {PY}" in out
    assert f"checkout  {checkout}: 0.5.9; git " in out and "on main (clean)" in out
    assert "gpus      none (no nvidia-smi on this host)" in out
    report = json.loads(_check(sshd, "--python", PY, "--json").output)
    assert report["usable"] is True and report["ok"] is True and report["gpus"]["interconnect"] == "none"


def test_missing_sglang_and_gpus_fail_only_when_required(sshd: SSHD) -> None:  # noqa: F811
    result = _check(sshd, "--python", PY, "--require", "sglang,gpu")
    assert result.exit_code == 1
    assert "problem   SGLang is not installed" in result.output and "problem   No GPUs found" in result.output
    bad = _check(sshd, "--require", "tpu")
    assert bad.exit_code == 2 and "--require takes sglang, gpu" in bad.output


def test_unreachable_alias_exits_non_zero_with_what_to_do(sshd: SSHD) -> None:  # noqa: F811
    config = sshd.write_config("dead_config", {"deadhost": sshd.options(Port=str(free_port()))})
    result = _check(sshd, alias="deadhost", config=config)
    assert result.exit_code == 1
    assert "deadhost: NOT usable" in result.output and "error" in result.output
    assert "refused" in result.output.lower() or "unreachable" in result.output.lower()
    as_json = json.loads(_check(sshd, "--json", alias="deadhost", config=config).stdout)
    assert as_json["usable"] is False and as_json["error"]


def test_unknown_host_key_failed_auth_and_missing_python_are_unusable(sshd: SSHD, tmp_path: Path) -> None:  # noqa: F811
    empty = tmp_path / "known_hosts_empty"
    empty.write_text("")
    config = sshd.write_config("nokey_config", {"newhost": sshd.options(UserKnownHostsFile=str(empty))})
    result = _check(sshd, alias="newhost", config=config)
    assert result.exit_code == 1 and "known_hosts" in result.output
    stranger = tmp_path / "id_stranger"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(stranger)], check=True, capture_output=True
    )
    config = sshd.write_config("noauth_config", {"noauth": sshd.options(IdentityFile=str(stranger))})
    denied = _check(sshd, alias="noauth", config=config)
    assert denied.exit_code == 1 and "noauth: NOT usable" in denied.output and "authenticat" in denied.output.lower()
    no_python = _check(sshd, "--python", "/no/such/python3")
    assert no_python.exit_code == 1 and "No usable Python at `/no/such/python3`" in no_python.output
    assert "WORKBENCH_REMOTE_PYTHON" in no_python.output


def test_report_rendering_and_requirements() -> None:
    assert parse_requirements("sglang, GPU") == ("sglang", "gpu") and parse_requirements(None) == ()
    with pytest.raises(ConfigError):
        parse_requirements("sglang,disk")
    report = HostReport(
        host="gpu8",
        usable=True,
        python={"executable": "/opt/venv/bin/python", "version": "3.10.12", "hostname": "gpu8", "platform": "Linux"},
        sglang={
            "installed": {
                "version": "0.5.9",
                "package_dir": "/root/sglang/python/sglang",
                "editable": True,
                "git": {"commit": "0123456789abcdef", "branch": "main", "dirty": True, "changed_count": 2},
            },
            "checkouts": [],
        },
        gpus={
            "nvidia_smi": True,
            "driver_version": "550.54.15",
            "interconnect": "pcie",
            "gpus": [{"name": "NVIDIA H100 80GB HBM3", "memory_total_mib": 81559, "memory_used_mib": 4}] * 8,
            "links": [{"a": 0, "b": 1, "link": "PIX"}, {"a": 0, "b": 4, "link": "SYS"}],
        },
    )
    text = render_check(report)
    wheel = dataclasses.replace(
        report,
        sglang={
            "checkouts": [],
            "installed": {
                "version": "0.5.9",
                "package_dir": "/venv/lib/python3.10/site-packages/sglang",
                "git": None,
                "direct_url": {
                    "url": "https://github.com/sgl-project/sglang",
                    "vcs_info": {"commit_id": "abcdef0123456789"},
                },
            },
        },
    )
    assert "installed from https://github.com/sgl-project/sglang at commit abcdef012345" in render_check(wheel)
    assert "sglang    0.5.9 at /root/sglang/python/sglang, editable install; git 0123456789ab on main (dirty: 2" in text
    assert "gpus      8 x NVIDIA H100 80GB HBM3 (81559 MiB each, 32 MiB in use), driver 550.54.15" in text
    assert "links     pcie (PIX, SYS)" in text


def test_check_host_local() -> None:
    report = check_host("local")
    assert report.usable and report.python["executable"] == PY and report.gpus is not None
