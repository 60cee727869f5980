"""Patches on real SGLang source: the shipped 0.5.9 patch, a git checkout made from the 0.5.9 wheel, release copies.

The checkout is a real git repository (``git init`` + commit of the unpacked
0.5.9 wheel laid out as ``python/sglang``, as in SGLang's repository). Patched
trees are worktrees of it: the tests check that the user's checkout is never
touched and that the worktree is gone afterwards.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from sshd_fixture import ALIAS, ssh_host, sshd  # noqa: F401  (pytest fixtures)

from workbench.errors import ConfigError, ConnectionLost, HostError
from workbench.hosts import LocalHost
from workbench.paths import PACKAGE_ROOT
from workbench.variants._variant import load_variant
from workbench.source import sglang_release
from workbench.variants import load_patch, patched_changes, prepare_tree, trial_apply
from workbench.variants._patchfile import explain_failure, parse_patch

PATCH = PACKAGE_ROOT / "data" / "patches" / "eagle-spec-off-above.patch"
PATCHED = "eagle3-topk4-off-above-8"
WORKER = "python/sglang/srt/speculative/eagle_worker.py"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    """A git repository holding SGLang 0.5.9 as python/sglang (from the cached wheel), one commit."""
    repo = tmp_path_factory.mktemp("sglang-checkout")
    shutil.copytree(sglang_release("0.5.9").package_dir, repo / "python" / "sglang")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "sglang 0.5.9")
    return repo


def variant_on(tmp_path: Path, base: str, patch: Path = PATCH) -> object:
    """The shipped patched variant, rewritten with another base (and patch)."""
    text = (PACKAGE_ROOT / "data" / "variants" / f"{PATCHED}.toml").read_text()
    text = text.replace('base = "sglang==0.5.9"', f'base = "{base}"')
    text = text.replace('patches = ["../patches/eagle-spec-off-above.patch"]', f'patches = ["{patch}"]')
    path = tmp_path / f"{PATCHED}.toml"
    path.write_text(text)
    return load_variant(path)


def test_patch_file_parses_with_header_and_hunks() -> None:
    patch = load_patch(PATCH)
    assert [f.path for f in patch.files] == [WORKER]
    hunks = patch.files[0].hunks
    assert [h.old_start for h in hunks] == [1, 94, 307, 381]
    assert "NOT been run on a GPU" in patch.header and len(patch.sha256) == 64
    assert patch.files[0].hunk_at(94).index == 2
    assert parse_patch("no diff here") == []


def test_patch_applies_to_the_real_059_wheel_source() -> None:
    trial = trial_apply(load_variant(PATCHED))
    assert trial.ok and trial.target == "sglang==0.5.9" and list(trial.files) == [WORKER]
    old, new = trial.files[WORKER]
    assert "SGLANG_SPEC_OFF_ABOVE" not in old and "SGLANG_SPEC_OFF_ABOVE" in new
    compile(new, WORKER, "exec")  # the patched module is still valid Python
    changed = {c.qualname for c in patched_changes(trial)}
    assert changed == {
        "EAGLEWorker.__init__",
        "EAGLEWorker.forward_batch_generation",
        "EAGLEWorker.forward_decode_without_draft",
    }


def test_patch_on_another_release_names_file_and_hunk() -> None:
    trial = trial_apply(load_variant(PATCHED), version="0.5.12")
    check = trial.checks[0]
    assert not trial.ok and check.file == WORKER and check.hunk is not None and check.hunk.index == 1
    assert f"hunk #1 (@@ -1,4 +1,5 @@) of {WORKER} does not apply to sglang==0.5.12" in check.message
    gone = trial_apply(load_variant(PATCHED), version="0.5.20").checks[0]  # the v1 worker was deleted
    assert gone.file == WORKER and gone.hunk is None and "does not exist in sglang==0.5.20" in gone.message


def test_explain_failure_maps_git_line_to_hunk() -> None:
    out = f"error: patch failed: {WORKER}:307\nerror: {WORKER}: patch does not apply\n"
    check = explain_failure(load_patch(PATCH), out, target="x")
    assert check.hunk.index == 3 and "hunk #3 (@@ -307,6 +311,8 @@" in check.message and "Fix:" in check.message


def test_worktree_of_checkout_is_patched_isolated_and_removed(checkout: Path, tmp_path: Path) -> None:
    v = variant_on(tmp_path, f"local:{checkout}")
    head = git(checkout, "rev-parse", "HEAD").strip()
    with prepare_tree(v, host="local", python=sys.executable) as tree:
        assert tree.kind == "worktree" and tree.base_commit == head and tree.dirty is False
        assert tree.version == "0.5.9" and tree.root != str(checkout)
        assert "SGLANG_SPEC_OFF_ABOVE" in Path(tree.root, WORKER).read_text()
        assert tree.import_origin == f"{tree.root}/python/sglang/__init__.py"
        assert tree.launch_env({"A": "1"}) == {"A": "1", "PYTHONPATH": f"{tree.root}/python"}
        assert "+        self.spec_off_above" in tree.diff()
        record = tree.provenance()
        assert record["base_commit"] == head and record["patches"][0]["sha256"] == load_patch(PATCH).sha256
        assert record["patches"][0]["text"] == PATCH.read_text() and record["launch"].startswith("PYTHONPATH=")
        assert len(git(checkout, "worktree", "list").splitlines()) == 2
        root = tree.root
    assert not Path(root).exists()
    assert len(git(checkout, "worktree", "list").splitlines()) == 1  # only the checkout itself
    assert git(checkout, "status", "--porcelain") == ""  # the user's checkout was never touched
    assert "SGLANG_SPEC_OFF_ABOVE" not in (checkout / WORKER).read_text()


def test_dirty_checkout_is_recorded_and_failing_patch_leaves_nothing(checkout: Path, tmp_path: Path) -> None:
    worker = checkout / WORKER
    original = worker.read_text()
    broken = original.replace("        self.enable_nan_detection = server_args.enable_nan_detection\n",
                              "        self.enable_nan_detection = False\n")  # fmt: skip
    branch = "broken"
    git(checkout, "checkout", "-q", "-b", branch)
    try:
        worker.write_text(broken)
        git(checkout, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-am", "edit __init__")
        with pytest.raises(ConfigError) as err:
            prepare_tree(variant_on(tmp_path, f"local:{checkout}"), host="local", python=sys.executable)
        message = str(err.value)
        assert "hunk #2 (@@ -94,6 +95,9 @@" in message and WORKER in message and "Fix:" in message
        assert len(git(checkout, "worktree", "list").splitlines()) == 1  # the failed worktree was removed
        worker.write_text(broken + "# local edit\n")  # uncommitted change: a dirty checkout
        patch = tmp_path / "comment.patch"
        patch.write_text(
            "diff --git a/python/sglang/version.py b/python/sglang/version.py\n--- a/python/sglang/version.py\n"
            "+++ b/python/sglang/version.py\n@@ -1 +1,2 @@\n+# patched\n try:\n"
        )
        v = variant_on(tmp_path, f"local:{checkout}", patch)
        with prepare_tree(v, host="local", python=sys.executable) as tree:
            assert tree.dirty is True and WORKER in tree.dirty_files
            assert "NOT in the launched server" in tree.provenance()["note"]
            assert "# local edit" not in Path(tree.root, WORKER).read_text()
        assert git(checkout, "status", "--porcelain").strip() == f"M {WORKER}"
    finally:
        worker.write_text(original)
        git(checkout, "checkout", "-q", "-f", "master" if "master" in git(checkout, "branch") else "main")
        git(checkout, "branch", "-q", "-D", branch)


def test_release_copy_is_patched_and_removed(tmp_path: Path) -> None:
    v = load_variant(PATCHED)
    with prepare_tree(v, host=LocalHost(), python=sys.executable, scratch_parent=str(tmp_path)) as tree:
        assert tree.kind == "release-copy" and tree.version == "0.5.9" and tree.wheel_sha256
        assert Path(tree.root, "python/sglang/__init__.py").is_file()
        assert "SGLANG_SPEC_OFF_ABOVE" in Path(tree.root, WORKER).read_text()
        assert tree.import_origin == f"{tree.root}/python/sglang/__init__.py"
        root = tree.root
    assert not Path(root).exists() and list(tmp_path.iterdir()) == []


def test_release_copy_over_ssh_is_streamed_patched_and_removed(ssh_host, tmp_path: Path) -> None:
    """The same tree on an SSH host: the release travels as a tar stream on stdin, one command."""
    with prepare_tree(load_variant(PATCHED), host=ssh_host, python=sys.executable,
                      scratch_parent=str(tmp_path / "remote")) as tree:  # fmt: skip
        assert tree.host is ssh_host and tree.kind == "release-copy"
        assert "SGLANG_SPEC_OFF_ABOVE" in ssh_host.read_bytes(f"{tree.root}/{WORKER}").decode()
        assert tree.import_origin == f"{tree.root}/python/sglang/__init__.py"
        root = tree.root
    assert not Path(root).exists()


def test_patches_without_base_are_refused(tmp_path: Path) -> None:
    v = variant_on(tmp_path, "sglang==0.5.9")
    v = type(v)(**{**v.__dict__, "base": None})
    with pytest.raises(ConfigError, match="patches but no base"):
        prepare_tree(v, host="local")


class _ReadFails(LocalHost):
    """This machine, whose file reads fail the way an SSH host's do when its connection drops
    (``ConnectionLost``) or a file is unreadable (``HostError`` from a ``PermissionError``)."""

    def __init__(self, error: HostError) -> None:
        super().__init__()
        self.error = error

    def read_bytes(self, path: str) -> bytes:
        raise self.error


def _unreadable() -> HostError:
    try:
        raise PermissionError(13, "Permission denied")
    except PermissionError as exc:
        try:
            raise HostError("Cannot read x on host 'local': Permission denied") from exc
        except HostError as err:
            return err


@pytest.mark.parametrize(
    "error",
    [
        ConnectionLost("Connection to host local dropped while trying to read x, and again after reconnecting"),
        _unreadable(),
    ],
    ids=["connection-lost", "permission-denied"],
)
def test_a_failed_read_in_the_trial_is_raised_not_taken_for_a_missing_file(
    checkout: Path, tmp_path: Path, error: HostError
) -> None:
    """Before, any exception while reading the touched files meant 'the target lacks it': a trial on a
    host whose connection dropped came back ok with no files. Now only a missing file is left out."""
    host = _ReadFails(error)
    with pytest.raises(type(error)) as info:
        trial_apply(variant_on(tmp_path, f"local:{checkout}"), host=host)
    assert info.value is error
    assert any("patch-check scratch tree on host 'local'" in note for note in info.value.__notes__)


def test_a_file_the_checkout_lacks_is_left_out_over_ssh(ssh_host, tmp_path: Path) -> None:
    """A missing file over SFTP (ENOENT) is still just not shown; the failed check names it."""
    repo = tmp_path / "sglang-without-worker"
    (repo / "python" / "sglang").mkdir(parents=True)
    (repo / "python" / "sglang" / "version.py").write_text('__version__ = "0.5.9"\n')
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "no worker")
    trial = trial_apply(variant_on(tmp_path, f"{ALIAS}:{repo}"), host=ssh_host)
    assert trial.files == {} and not trial.ok and trial.target.startswith(f"{ALIAS}:{repo} at ")
    assert trial.checks[0].file == WORKER and "does not exist" in trial.checks[0].message
    with pytest.raises(HostError) as info:  # what the trial met, as the host raises it
        ssh_host.read_bytes(f"{repo}/{WORKER}")
    assert type(info.value) is HostError and isinstance(info.value.__cause__, FileNotFoundError)
