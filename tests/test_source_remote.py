"""Source inspection on an SSH host (a real sshd on 127.0.0.1): helper upload, batches, hostile names and paths."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sshd_fixture import ssh_host, sshd  # noqa: F401  (pytest fixtures)

from workbench.errors import ConfigError, SourceError
from workbench.hosts import SSHHost
from workbench.hosts._helpers import remote_location
from workbench.source import find_definition, find_references, read_lines

HOSTILE_DIR = "check out 'quoted' \"dq\" $HOME `x` ;&"
MODULE = '''"""A module with names worth finding."""


class Größe:
    def weigh(self, x):
        return größe_helper(x) + 1


def größe_helper(x):
    return x * 2


def get_alloc_len_per_decode() -> int:
    return 3
'''


@pytest.fixture
def remote_tree(tmp_path: Path) -> Path:
    """A tree whose directory and file names need quoting in any shell line."""
    root = tmp_path / HOSTILE_DIR
    (root / "srt" / "it's here").mkdir(parents=True)
    (root / "srt" / "it's here" / "a b.py").write_text(MODULE, encoding="utf-8")
    return root


@pytest.fixture
def counted(ssh_host: SSHHost) -> Iterator[tuple[SSHHost, list[str]]]:  # noqa: F811
    """The SSH host with every command line it runs recorded."""
    commands: list[str] = []
    execute = ssh_host._execute

    def recording(command: str, *, timeout_s: float | None, stdin: bytes | None):  # type: ignore[no-untyped-def]
        commands.append(command)
        return execute(command, timeout_s=timeout_s, stdin=stdin)

    ssh_host._execute = recording  # type: ignore[method-assign]
    yield ssh_host, commands


def test_a_batch_of_lookups_in_a_hostile_tree_is_one_round_trip(counted, remote_tree: Path) -> None:  # noqa: ANN001
    host, commands = counted
    names = ["Größe.weigh", "größe_helper", "get_alloc_len_per_decode", "not_there"]
    find_definition(names, versions=(), host=host, tree=str(remote_tree))  # uploads the helper when missing
    commands.clear()
    df = find_definition(names, versions=(), host=host, tree=str(remote_tree), tree_label="gpu")
    assert len(commands) == 1, commands  # warm: test-and-run in one shell line
    assert list(df["query"]) == names and list(df["found"]) == [True, True, True, False]
    weigh = df.iloc[0]
    assert (weigh["path"], weigh["kind"], weigh["enclosing_class"], weigh["start_line"]) == (
        "srt/it's here/a b.py", "method", "Größe", 5)  # fmt: skip
    assert weigh["source"] == "    def weigh(self, x):\n        return größe_helper(x) + 1\n"
    assert set(df["host"]) == {"wbtest"} and set(df["root"]) == {str(remote_tree)}
    assert remote_location("find_definitions") in commands[0].replace('"$HOME"', "~")


def test_references_on_the_ssh_host(ssh_host: SSHHost, remote_tree: Path) -> None:  # noqa: F811
    refs = find_references("größe_helper", versions=(), host=ssh_host, tree=str(remote_tree))
    assert [(r.line, r.kind, r.enclosing) for r in refs.itertuples()] == [(6, "call", "Größe.weigh")]


def test_read_lines_of_a_hostile_path(counted, remote_tree: Path) -> None:  # noqa: ANN001
    host, commands = counted
    got = read_lines("srt/it's here/a b.py", 9, 10, host=host, tree=str(remote_tree))
    assert got.text == "def größe_helper(x):\n    return x * 2\n"
    assert (got.start, got.end, got.total_lines, got.host) == (9, 10, 14, "wbtest")
    assert got.numbered().splitlines()[0] == " 9  def größe_helper(x):"
    assert "größe_helper" in got._repr_html_()
    commands.clear()
    whole = read_lines(str(remote_tree / "srt" / "it's here" / "a b.py"), host=host, tree=str(remote_tree))
    assert whole.text == MODULE and len(commands) == 1


def test_read_errors_name_the_file_and_host(ssh_host: SSHHost, remote_tree: Path) -> None:  # noqa: F811
    with pytest.raises(SourceError, match=r"'srt/nope \$x\.py'.*host 'wbtest'.*No such file"):
        read_lines("srt/nope $x.py", host=ssh_host, tree=str(remote_tree))
    with pytest.raises(SourceError, match="has 14 lines; line 99 is past its end"):
        read_lines("srt/it's here/a b.py", 99, host=ssh_host, tree=str(remote_tree))
    with pytest.raises(SourceError, match="does not exist"):
        find_definition("x", versions=(), host=ssh_host, tree=str(remote_tree / "gone 'too'"))


@pytest.mark.parametrize("name", ["x'; touch /tmp/pwned-{tag} #", "a b", 'say "hi"', "$(id)", "", "a..b", "1abc"])
def test_hostile_names_are_refused_before_anything_runs(counted, remote_tree: Path, name: str) -> None:  # noqa: ANN001
    host, commands = counted
    tag = uuid.uuid4().hex[:8]
    with pytest.raises(ConfigError, match="is not a Python name"):
        find_definition(["ok_name", name.format(tag=tag)], versions=(), host=host, tree=str(remote_tree))
    assert commands == [] and not Path(f"/tmp/pwned-{tag}").exists()


def test_a_changed_helper_is_uploaded_under_a_new_key(counted, remote_tree: Path, monkeypatch) -> None:  # noqa: ANN001
    host, commands = counted
    import workbench.hosts._helpers as remote_helpers

    scripts = remote_tree.parent / "scripts"
    scripts.mkdir()
    original = (remote_helpers.REMOTE_DIR / "find_definitions.py").read_text(encoding="utf-8")
    (scripts / "find_definitions.py").write_text(original + f"\n# changed {uuid.uuid4().hex}\n", encoding="utf-8")
    shutil.copy(remote_helpers.REMOTE_DIR / "_find_definitions_index.py", scripts)  # its companion module
    monkeypatch.setattr(remote_helpers, "REMOTE_DIR", scripts)
    location = remote_location("find_definitions")
    df = find_definition("größe_helper", versions=(), host=host, tree=str(remote_tree))
    assert df.iloc[0]["found"] and len(commands) == 3  # try, check, run (upload by SFTP in between)
    copy = Path(location.replace("~", str(Path.home()), 1))
    assert copy.read_text(encoding="utf-8") == (scripts / "find_definitions.py").read_text(encoding="utf-8")
    shutil.rmtree(copy.parent)  # the helper, the _common.py uploaded beside it, and its __pycache__


def test_server_flags_of_a_checkout_on_the_ssh_host(counted, tmp_path: Path) -> None:  # noqa: ANN001
    host, commands = counted
    from workbench.source import server_flags, sglang_release

    checkout = tmp_path / HOSTILE_DIR
    (checkout / "python" / "sglang" / "srt").mkdir(parents=True)
    source = sglang_release("0.5.9").package_dir / "srt" / "server_args.py"
    (checkout / "python" / "sglang" / "srt" / "server_args.py").write_bytes(source.read_bytes())
    server_flags(str(checkout), host=host)  # uploads remote/server_flags.py when missing
    commands.clear()
    table = server_flags(str(checkout), host=host)
    assert len(commands) == 1 and table.host == "wbtest" and table.version is None
    assert table.root == str(checkout / "python" / "sglang")
    assert table.match("--tp").option == "--tp-size" and "--cuda-graph-max-bs" in table
