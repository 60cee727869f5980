"""call_helper: real helper scripts run with real interpreters on LocalHost; every error path."""

from __future__ import annotations

import ast
import glob
import os
from pathlib import Path

import pytest

from workbench.errors import CommandError, CommandTimeout, ConfigError, HelperError, SourceError
from workbench.hosts import CommandResult, Host, LocalHost
from workbench.hosts._helpers import REMOTE_DIR, call_helper, helper_files, helper_path, remote_location


class ElsewhereHost(Host):
    """A host treated as not sharing this machine's files (commands still run here); logs what it is asked."""

    def __init__(self) -> None:
        self.name = "gpu-elsewhere"
        self._local = LocalHost()
        self.commands: list[str] = []
        self.writes: list[str] = []

    def _execute(self, command: str, *, timeout_s: float | None, stdin: bytes | None) -> CommandResult:
        self.commands.append(command)
        return self._local._execute(command, timeout_s=timeout_s, stdin=stdin)

    def read_bytes(self, path: str) -> bytes:
        return self._local.read_bytes(path)

    def write_bytes(self, path: str, data: bytes, *, mode: int = 0o644) -> None:
        self.writes.append(path)
        self._local.write_bytes(path, data, mode=mode)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "a tree 'with' quotes"
    root.mkdir()
    (root / "m.py").write_text("class K:\n    def hello(self):\n        return 1\n", encoding="utf-8")
    return root


def test_local_helper_path_is_the_checkout_script() -> None:
    path = helper_path(LocalHost(), "find_definitions")
    assert Path(path) == REMOTE_DIR / "find_definitions.py" and Path(path).is_file()


def test_call_helper_round_trip(tree: Path) -> None:
    answer = call_helper(LocalHost(), "find_definitions", {"root": str(tree), "queries": [{"name": "K.hello"}]})
    assert answer["ok"] is True
    [match] = answer["results"][0]["matches"]
    assert (match["path"], match["qualname"], match["kind"], match["start_line"]) == ("m.py", "K.hello", "method", 2)


@pytest.mark.parametrize("name", ["no_such_helper", "../find_definitions", "Find-Definitions", "_common"])
def test_unknown_or_malformed_helper_names(name: str) -> None:
    with pytest.raises(ConfigError, match="remote helper|Remote helper"):
        call_helper(LocalHost(), name, {})


def test_refused_request_is_a_helper_error_naming_host_script_and_reason(tmp_path: Path) -> None:
    missing = tmp_path / "gone"
    with pytest.raises(HelperError) as info:
        call_helper(LocalHost(), "find_definitions", {"root": str(missing), "queries": [{"name": "x"}]})
    message = str(info.value)
    assert "'find_definitions'" in message and "host 'local'" in message
    assert str(missing) in message and "does not exist" in message
    error = info.value
    assert not isinstance(error, SourceError) and isinstance(error, CommandError)  # a host-side command failed
    assert (error.helper, error.host, error.result.exit_status) == ("find_definitions", "local", 2)
    assert "does not exist" in error.error


@pytest.mark.parametrize(
    ("name", "request_"),
    [
        ("gpu_inventory", {"nvidia_smi": 7}),
        ("checkout_state", {"paths": [""]}),
        ("process_status", {"processes": "not a list"}),
    ],
)
def test_a_helper_that_is_not_about_source_refuses_with_a_helper_error(name: str, request_: dict) -> None:
    with pytest.raises(HelperError) as info:
        call_helper(LocalHost(), name, request_)
    assert not isinstance(info.value, SourceError) and info.value.helper == name
    assert f"remote helper {name!r}" in str(info.value) and "refused the request" in str(info.value)


def test_request_that_is_not_json_is_a_config_error(tree: Path) -> None:
    with pytest.raises(ConfigError, match="not JSON-serialisable"):
        call_helper(LocalHost(), "find_definitions", {"root": str(tree), "queries": [{"name": object()}]})


def test_interpreter_without_an_answer_is_a_command_error(tree: Path) -> None:
    with pytest.raises(CommandError) as info:
        call_helper(LocalHost(), "find_definitions", {"root": str(tree), "queries": []}, python="false")
    assert "gave no JSON answer" in str(info.value) and "exited 1" in str(info.value)
    assert info.value.result is not None and info.value.result.exit_status == 1


def test_missing_interpreter_is_a_command_error(tree: Path) -> None:
    with pytest.raises(CommandError, match="no-such-python3"):
        call_helper(LocalHost(), "find_definitions", {"root": str(tree), "queries": []}, python="no-such-python3")


PYTHON2 = next(iter(sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/2.7*/bin/python2")))), None)


@pytest.mark.skipif(PYTHON2 is None, reason="no Python 2 interpreter here")
def test_too_old_interpreter_shows_its_stderr_tail(tree: Path) -> None:
    with pytest.raises(CommandError) as info:
        call_helper(LocalHost(), "find_definitions", {"root": str(tree), "queries": [{"name": "x"}]}, python=PYTHON2)
    assert "SyntaxError" in str(info.value) and "stderr" in str(info.value)


def test_timeout_names_the_helper(tree: Path) -> None:
    with pytest.raises(CommandTimeout, match="'find_definitions'.*timeout_s") as info:
        call_helper(LocalHost(), "find_definitions", {"root": str(tree), "queries": [{"name": "x"}]}, timeout_s=0.001)
    assert info.value.result is not None and info.value.result.timed_out


def test_other_hosts_get_the_helper_uploaded_once_then_one_command_per_call(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home dir"
    monkeypatch.setenv("HOME", str(home))  # the upload cache is ~/.cache/... on the host
    host = ElsewhereHost()
    request = {"root": str(tree), "queries": [{"name": "K.hello"}]}
    first = call_helper(host, "find_definitions", request)
    assert first["results"][0]["matches"][0]["qualname"] == "K.hello"
    copy = home / ".cache" / "specbench-workbench" / "remote" / remote_location("find_definitions")[len(
        "~/.cache/specbench-workbench/remote/"):]  # fmt: skip
    assert copy.read_bytes() == (REMOTE_DIR / "find_definitions.py").read_bytes()
    common = copy.parent / "_common.py"  # the module every helper imports, beside it
    assert common.read_bytes() == (REMOTE_DIR / "_common.py").read_bytes()
    index = copy.parent / "_find_definitions_index.py"  # its own module (COMPANION_MODULES), beside it too
    assert host.writes == [str(common), str(index), str(copy)] and len(host.commands) == 3  # try, check, run
    host.commands.clear()
    second = call_helper(host, "find_definitions", request)
    assert second["results"] == first["results"]
    assert len(host.commands) == 1 and host.writes == [str(common), str(index), str(copy)]  # warm: no upload
    assert helper_path(host, "find_definitions") == str(copy)
    host.commands.clear()
    common.unlink()  # the script is there but not what it imports: answered as a crash, not mistaken
    with pytest.raises(CommandError, match="_common"):
        call_helper(host, "find_definitions", request)
    assert len(host.commands) == 1


def test_a_missing_interpreter_on_another_host_is_not_mistaken_for_a_missing_upload(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    host = ElsewhereHost()
    with pytest.raises(CommandError, match="no-such-python3") as info:
        call_helper(host, "find_definitions", {"root": str(tree), "queries": [{"name": "x"}]}, python="no-such-python3")
    assert "gpu-elsewhere" in str(info.value)
    assert len(host.writes) == 3  # uploaded once (the helper, _common.py, its index module), then the run failed


def _sibling_imports(path: Path) -> set[str]:
    """File names of the ``remote/`` modules that ``path`` imports."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return {f"{name}.py" for name in names if (REMOTE_DIR / f"{name}.py").is_file()}


@pytest.mark.parametrize("script", sorted(p.stem for p in REMOTE_DIR.glob("[a-z]*.py")))
def test_every_sibling_a_script_imports_travels_with_it(script: str) -> None:
    files = helper_files(script)
    assert files[0].name == "_common.py" and files[-1] == REMOTE_DIR / f"{script}.py"
    uploaded = {f.name for f in files}
    for path in files:
        assert path.is_file() and _sibling_imports(path) <= uploaded, path.name
