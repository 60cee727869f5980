"""SSHHost files over SFTP (read/write/put/get) and content-keyed uploads, against a real sshd."""

from __future__ import annotations

import hashlib
import os
import uuid
from pathlib import Path

import pytest
from sshd_fixture import ssh_host, sshd  # noqa: F401  (pytest fixtures)

from workbench.errors import ConfigError, HostError
from workbench.hosts import LocalHost, SSHHost, ensure_file, require_python, shell_path
from workbench.hosts._upload import ensure_files


def test_write_then_read_bytes_atomically_with_parents_and_mode(ssh_host: SSHHost, tmp_path: Path) -> None:
    target = tmp_path / "a b" / "c'd" / "data.bin"
    data = bytes(range(256)) * 4096
    ssh_host.write_bytes(str(target), data, mode=0o640)
    assert target.read_bytes() == data and oct(target.stat().st_mode & 0o777) == oct(0o640)
    assert ssh_host.read_bytes(str(target)) == data
    ssh_host.write_text(str(target), "replaced")
    assert ssh_host.read_text(str(target)) == "replaced"
    assert os.listdir(target.parent) == ["data.bin"], "temp files left behind"


def test_reading_a_missing_file_names_host_and_path(ssh_host: SSHHost, tmp_path: Path) -> None:
    missing = str(tmp_path / "nope.txt")
    with pytest.raises(HostError) as info:
        ssh_host.read_bytes(missing)
    assert missing in str(info.value) and "wbtest" in str(info.value)
    assert ssh_host.connected  # a file error is not a connection error


def test_tilde_means_the_login_users_home(ssh_host: SSHHost) -> None:
    rel = f".cache/wb-test-{uuid.uuid4().hex[:8]}"
    try:
        ssh_host.write_bytes(f"~/{rel}/f.txt", b"home")
        assert Path(os.path.expanduser(f"~/{rel}/f.txt")).read_bytes() == b"home"
        assert ssh_host.read_bytes(f"~/{rel}/f.txt") == b"home"
    finally:
        ssh_host.run(["rm", "-rf", os.path.expanduser(f"~/{rel}")])


def test_put_and_get_stream_files(ssh_host: SSHHost, tmp_path: Path) -> None:
    src = tmp_path / "src.bin"
    src.write_bytes(os.urandom(3 * 1024 * 1024))
    src.chmod(0o750)
    remote = tmp_path / "remote dir" / "copy.bin"
    ssh_host.put(src, str(remote))
    assert remote.read_bytes() == src.read_bytes() and oct(remote.stat().st_mode & 0o777) == oct(0o750)
    back = tmp_path / "back" / "copy.bin"
    ssh_host.get(str(remote), back)
    assert back.read_bytes() == src.read_bytes()
    with pytest.raises(HostError):
        ssh_host.get(str(tmp_path / "missing"), tmp_path / "back" / "missing")
    assert sorted(os.listdir(back.parent)) == ["copy.bin"], "temp files left behind"


def test_ensure_file_uploads_once_keyed_by_content(
    ssh_host: SSHHost, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "helper.py"
    script.write_text("print('v1')\n")
    cache = tmp_path / "cache dir; $(touch PWNED)"
    path = ensure_file(ssh_host, script, cache_dir=str(cache))
    sha12 = hashlib.sha256(script.read_bytes()).hexdigest()[:12]
    assert path == f"{cache}/{sha12}/helper.py"
    assert ssh_host.run(["python3", path]).stdout == "v1\n"

    commands: list[str] = []
    real_execute = ssh_host._execute
    monkeypatch.setattr(ssh_host, "_execute", lambda cmd, **kw: commands.append(cmd) or real_execute(cmd, **kw))
    monkeypatch.setattr(ssh_host, "write_bytes", lambda *a, **kw: pytest.fail("uploaded again"))
    assert ensure_file(ssh_host, script, cache_dir=str(cache)) == path
    assert len(commands) == 1 and '[ -f "$p" ]' in commands[0]
    monkeypatch.undo()

    script.write_text("print('v2')\n")
    path2 = ensure_file(ssh_host, script, cache_dir=str(cache))
    assert path2 != path and ssh_host.run(["python3", path2]).stdout == "v2\n"
    assert not (tmp_path / "PWNED").exists()


def test_ensure_files_puts_a_script_beside_the_module_it_imports(
    ssh_host: SSHHost, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "src").mkdir()
    module, script = tmp_path / "src" / "_shared.py", tmp_path / "run me.py"
    module.write_text("WORD = 'one'\n")
    script.write_text(
        "import sys, os\nsys.path[:0] = [os.path.dirname(os.path.abspath(__file__))]\n"
        "import _shared\nprint(_shared.WORD)\n"
    )
    cache = tmp_path / "cache"
    paths = ensure_files(ssh_host, [module, script], cache_dir=str(cache))
    assert [Path(p).name for p in paths] == ["_shared.py", "run me.py"]
    assert Path(paths[0]).parent == Path(paths[1]).parent
    assert ssh_host.run(["python3", "-I", paths[1]]).stdout == "one\n"

    writes: list[str] = []
    commands: list[str] = []
    real_execute, real_write = ssh_host._execute, ssh_host.write_bytes
    monkeypatch.setattr(ssh_host, "_execute", lambda cmd, **kw: commands.append(cmd) or real_execute(cmd, **kw))
    monkeypatch.setattr(
        ssh_host, "write_bytes", lambda path, *a, **kw: writes.append(path) or real_write(path, *a, **kw)
    )
    Path(paths[0]).unlink()
    assert ensure_files(ssh_host, [module, script], cache_dir=str(cache)) == paths
    assert len(commands) == 1 and writes == [paths[0]]  # one check; only the missing file is sent
    module.write_text("WORD = 'two'\n")  # the module changed: both go to a new directory
    moved = ensure_files(ssh_host, [module, script], cache_dir=str(cache))
    assert Path(moved[1]).parent != Path(paths[1]).parent and ssh_host.run(["python3", moved[1]]).stdout == "two\n"
    with pytest.raises(ConfigError, match="distinct names"):
        ensure_files(ssh_host, [script, script], cache_dir=str(cache))


def test_ensure_file_default_cache_is_under_home(ssh_host: SSHHost, tmp_path: Path) -> None:
    script = tmp_path / "tool.sh"
    script.write_text("#!/bin/sh\necho tool\n")
    script.chmod(0o755)
    cache = f"~/.cache/wb-test-{uuid.uuid4().hex[:8]}"
    try:
        path = ensure_file(ssh_host, script, cache_dir=cache)
        assert path.startswith(os.path.expanduser(cache) + "/") and path.endswith("/tool.sh")
        assert ssh_host.run([path]).stdout == "tool\n"
    finally:
        ssh_host.run(["rm", "-rf", os.path.expanduser(cache)])


def test_ensure_file_on_this_machine_uses_the_file_in_place(tmp_path: Path) -> None:
    script = tmp_path / "helper.py"
    script.write_text("pass\n")
    assert ensure_file(LocalHost(), script) == str(script.resolve())
    with pytest.raises(HostError):
        ensure_file(LocalHost(), tmp_path / "missing.py")


@pytest.mark.parametrize("path", ["~", "~/a b/$(id)", "/tmp/'q' \"dq\" `x`", "~user/x", "rel/~/x"])
def test_shell_path_expands_only_the_leading_home(ssh_host: SSHHost, path: str) -> None:
    expected = os.path.expanduser(path) if path == "~" or path.startswith("~/") else path
    assert ssh_host.run(f"printf %s {shell_path(path)}").stdout == expected


def test_require_python(ssh_host: SSHHost) -> None:
    assert require_python(ssh_host).startswith("/")
    with pytest.raises(HostError) as info:
        require_python(ssh_host, python="python3-nonexistent")
    assert "No usable python3-nonexistent on host 'wbtest'" in str(info.value)
    with pytest.raises(HostError) as info:
        require_python(ssh_host, min_version=(99, 0))
    assert "needs 99.0 or newer" in str(info.value)
