"""Where a variant's SGLang comes from: isolated, patched copies of a checkout or a release.

A variant whose ``base`` is a checkout or a release runs from a source tree, and
that tree is the only thing its patches ever touch:

- **checkout + patches**: ``git worktree add --detach <tmp> HEAD`` in the user's
  repository, patches applied there; the user's working tree, index and branches
  are not touched (uncommitted changes are not carried over: the manifest says so).
  Closing runs ``git worktree remove --force`` and ``git worktree prune``.
- **release** (with or without patches): the unpacked wheel from the local cache
  (:func:`workbench.source.sglang_release`) is streamed as a tar archive into
  ``<tmp>/python/`` on the host (``git init`` there, so ``git apply`` works the same);
  closing removes ``<tmp>``.
- **checkout, no patches**: the checkout itself, read-only.

``<tmp>`` is made by ``mktemp -d`` under ``~/.cache/specbench-workbench/patched/``
on the host. Patches are checked with ``git apply --check`` before each is applied
(a failure names the file and hunk). The server is launched from the tree with
``PYTHONPATH=<tree>/python`` (:meth:`LaunchTree.launch_env`): Python puts PYTHONPATH
ahead of site-packages and of editable installs, and :func:`prepare_tree` confirms
that ``import sglang`` resolves into the tree before anything starts.
"""

from __future__ import annotations

import dataclasses
import io
import shlex
import tarfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from workbench.errors import ConfigError, SourceError
from workbench.hosts import Host, get_host
from workbench.hosts import call_helper
from workbench.variants._variant import Base, Variant
from workbench.source import sglang_release
from workbench.variants._patchfile import Patch, PatchCheck, explain_failure, load_patch
from workbench.variants._rules import tree_version

#: Scratch trees live here, under the host's home directory.
SCRATCH_DIR = ".cache/specbench-workbench/patched"
#: Limit for one git or copy command on the host, in seconds.
GIT_TIMEOUT_S = 300.0
#: The import package a release wheel unpacks to (copied with its ``.dist-info``).
_PACKAGE = "sglang"

TreeKind = Literal["worktree", "release-copy", "checkout"]


def _sh(host: Host, line: str, *, stdin: bytes | None = None, check: bool = True, timeout_s: float = GIT_TIMEOUT_S):
    return host.run(["sh", "-c", line], stdin=stdin, check=check, timeout_s=timeout_s)


def same_host(a: str, b: str) -> bool:
    """True when two host names mean the same host (``local`` and ``localhost`` are this machine)."""
    local = ("local", "localhost", "")
    return a == b or (a in local and b in local)


def make_scratch_dir(host: Host, label: str, *, parent: str | None = None) -> str:
    """An empty new directory on ``host`` (``mktemp -d``) named after ``label``; returns its path."""
    slug = "".join(c if c.isalnum() or c in "-_." else "-" for c in label)[:60] or "tree"
    where = shlex.quote(parent) if parent else f'"$HOME"/{SCRATCH_DIR}'
    out = _sh(host, f"mkdir -p {where} && mktemp -d {where}/{shlex.quote(slug)}.XXXXXX").stdout.strip()
    if not out.startswith("/"):
        raise SourceError(f"mktemp on host {host.name!r} answered {out!r}, not a directory path")
    return out


@dataclasses.dataclass
class LaunchTree:
    """An SGLang source tree on a host that a server is launched from.

    Attributes:
        host: where it is.
        kind: ``"worktree"`` (isolated git worktree of a checkout, patched),
            ``"release-copy"`` (isolated copy of a release, maybe patched) or
            ``"checkout"`` (the user's checkout, unpatched, never modified).
        root: the tree's root (holding ``python/sglang``).
        base: the variant's base.
        version: SGLang version read from the tree (``python/sglang/version.py``).
        repo: the user's repository (worktree and checkout kinds), else None.
        base_commit: commit the tree was made from (git kinds), else None.
        dirty: whether the user's checkout had uncommitted changes to tracked files.
        dirty_files: up to 50 of those files.
        wheel, wheel_sha256: the release wheel (release copies).
        patches: patches applied, in order.
        import_origin: where ``import sglang`` resolves with :meth:`launch_env`.
    """

    host: Host
    kind: TreeKind
    root: str
    base: Base
    version: str | None = None
    repo: str | None = None
    base_commit: str | None = None
    dirty: bool | None = None
    dirty_files: list[str] = dataclasses.field(default_factory=list)
    wheel: str | None = None
    wheel_sha256: str | None = None
    patches: list[Patch] = dataclasses.field(default_factory=list)
    import_origin: str | None = None
    closed: bool = False

    @property
    def pythonpath(self) -> str:
        """The directory to put on PYTHONPATH (``<root>/python``)."""
        return f"{self.root}/python"

    def launch_env(self, env: dict[str, str] | None = None) -> dict[str, str]:
        """``env`` with PYTHONPATH starting at this tree (an existing PYTHONPATH entry follows it)."""
        out = dict(env or {})
        out["PYTHONPATH"] = ":".join(p for p in (self.pythonpath, out.get("PYTHONPATH")) if p)
        return out

    def diff(self) -> str:
        """What the patches changed, as git reports it in the tree (worktree and release copy)."""
        if self.kind == "checkout":
            return ""
        return _sh(self.host, f"git -C {shlex.quote(self.root)} diff", check=False).stdout

    def provenance(self) -> dict[str, Any]:
        """The manifest record: base, version, commit, dirty state, patches, how the server is launched."""
        note = None
        if self.kind == "worktree" and self.dirty:
            note = (
                "the checkout had uncommitted changes; the patched worktree is made from the commit, "
                "so those changes are NOT in the launched server"
            )
        return {
            "tree_kind": self.kind, "tree": self.root, "host": self.host.name, "base": str(self.base),
            "sglang_version": self.version, "repo": self.repo, "base_commit": self.base_commit,
            "dirty": self.dirty, "dirty_files": self.dirty_files, "wheel": self.wheel,
            "wheel_sha256": self.wheel_sha256, "launch": f"PYTHONPATH={self.pythonpath} (prepended)",
            "import_origin": self.import_origin, "note": note,
            "patches": [dict(p.provenance(), applied=True) for p in self.patches],
        }  # fmt: skip

    def close(self) -> None:
        """Remove an isolated tree (worktree remove + prune, or delete the copy); a checkout is left alone."""
        if self.closed or self.kind == "checkout":
            self.closed = True
            return
        root = shlex.quote(self.root)
        if self.kind == "worktree" and self.repo:
            repo = shlex.quote(self.repo)
            _sh(self.host, f"git -C {repo} worktree remove --force {root} || rm -rf {root}; "
                           f"git -C {repo} worktree prune", check=False)  # fmt: skip
        else:
            _sh(self.host, f"rm -rf {root}", check=False)
        self.closed = True

    def __enter__(self) -> "LaunchTree":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def prepare_tree(
    variant: Variant,
    *,
    host: str | Host = "local",
    python: str = "python3",
    scratch_parent: str | None = None,
) -> LaunchTree | None:
    """The tree ``variant`` launches from on ``host``, patched; None for an installed base without patches.

    Args:
        variant: the variant (its ``base`` and ``patches``).
        host: where the server will run.
        python: the interpreter that will run the server (to confirm ``import sglang``).
        scratch_parent: directory on the host for isolated trees (default
            ``~/.cache/specbench-workbench/patched``).

    Returns:
        A :class:`LaunchTree` (use it as a context manager, so the isolated copy is removed).

    Raises:
        ConfigError: patches without a base, a checkout on another host, or a patch that
            does not apply (the message names the file and hunk; nothing is left behind).
        SourceError, HostError: the release or checkout could not be read or copied.
    """
    h = get_host(host)
    base = variant.parsed_base
    patches = [load_patch(p) for p in variant.patches]
    if base.kind == "installed":
        if patches:
            raise ConfigError(
                f"variant {variant.name!r} has patches but no base to apply them to. Fix: set base to a "
                "checkout ('host:/path/to/sglang') or a release ('sglang==0.5.9') in its file"
            )
        return None
    if base.kind == "checkout":
        if not same_host(base.host_for(h.name), h.name):
            raise ConfigError(
                f"variant {variant.name!r}: its checkout is on host {base.host!r} but it runs on {h.name!r}. "
                "Fix: run it on that host, or write base as 'host:<path>' (the host it runs on)"
            )
        tree = _checkout_tree(h, variant, base, patches, scratch_parent, python)
    else:
        tree = _release_tree(h, variant, base, patches, scratch_parent)
    try:
        _apply_all(tree, patches)
        tree.patches = patches
        tree.import_origin = _import_origin(h, tree, python)
        if tree.import_origin and not tree.import_origin.startswith(tree.pythonpath + "/"):
            raise SourceError(
                f"With PYTHONPATH={tree.pythonpath}, {python} on host {h.name!r} imports sglang from "
                f"{tree.import_origin}, not from the tree. Fix: check that the interpreter honours "
                "PYTHONPATH (no -E/-I) and that the tree has python/sglang/__init__.py"
            )
    except BaseException:
        tree.close()
        raise
    return tree


def _checkout_tree(h: Host, variant: Variant, base: Base, patches: list[Patch], parent: str | None,
                   python: str) -> LaunchTree:  # fmt: skip
    repo = str(base.path)
    state = call_helper(h, "checkout_state", {"paths": [repo], "installed": False}, python=python)
    entry = (state.get("checkouts") or [{}])[0]
    git = entry.get("git") or {}
    if entry.get("error") or not git.get("commit"):
        raise SourceError(f"{repo} on host {h.name!r} is not a git checkout of SGLang "
                          f"({entry.get('error') or git.get('error') or 'no commit'}). Fix: point base at the "
                          "repository root (the directory holding python/sglang)")  # fmt: skip
    version = entry.get("version") or tree_version(h, f"{repo}/python/sglang")
    common = dict(
        host=h,
        base=base,
        version=version,
        repo=git.get("root") or repo,
        base_commit=git["commit"],
        dirty=git.get("dirty"),
        dirty_files=list(git.get("changed") or []),
    )
    if not patches:
        return LaunchTree(kind="checkout", root=git.get("root") or repo, **common)
    root = make_scratch_dir(h, f"{variant.name}-worktree", parent=parent)
    q = shlex.quote
    added = _sh(h, f"git -C {q(common['repo'])} worktree add --detach {q(root)} {q(git['commit'])}", check=False)
    if not added.ok:
        _sh(h, f"rm -rf {q(root)}", check=False)
        raise SourceError(f"git worktree add failed in {common['repo']} on host {h.name!r}: {added.describe()}")
    return LaunchTree(kind="worktree", root=root, **common)


def _release_tree(h: Host, variant: Variant, base: Base, patches: list[Patch], parent: str | None) -> LaunchTree:
    release = sglang_release(str(base.version))
    archive = _tar_release(release.root)
    root = make_scratch_dir(h, f"{variant.name}-sglang-{base.version}", parent=parent)
    q = shlex.quote(root)
    unpacked = _sh(h, f"mkdir -p {q}/python && tar -x -C {q}/python && git -C {q} init -q", stdin=archive,
                   check=False)  # fmt: skip
    if not unpacked.ok:
        _sh(h, f"rm -rf {q}", check=False)
        raise SourceError(f"Copying SGLang {base.version} to host {h.name!r} failed: {unpacked.describe()}")
    return LaunchTree(host=h, kind="release-copy", root=root, base=base, version=release.version,
                      wheel=release.wheel, wheel_sha256=release.wheel_sha256)  # fmt: skip


def _tar_release(root: Path) -> bytes:
    """The unpacked wheel (``sglang/`` and its ``.dist-info``) as an uncompressed tar, paths relative to it."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for entry in sorted(root.iterdir()):
            if entry.name == _PACKAGE or entry.name.endswith(".dist-info"):
                tar.add(entry, arcname=entry.name)
    return buf.getvalue()


def _apply_all(tree: LaunchTree, patches: Sequence[Patch]) -> None:
    """Check, then apply, each patch in order; raise ConfigError naming the file and hunk at the first failure."""
    target = _target_label(tree)
    for patch in patches:
        check = apply_patch(tree.host, tree.root, patch, target=target)
        if not check.ok:
            raise ConfigError(check.message)


def apply_patch(host: Host, root: str, patch: Patch, *, target: str, check_only: bool = False) -> PatchCheck:
    """``git apply --check`` ``patch`` in ``root`` on ``host``, then (unless ``check_only``) apply it.

    Returns:
        The :class:`PatchCheck` (``ok`` False names the failing file and hunk; nothing was changed).
    """
    q = shlex.quote(root)
    checked = _sh(host, f"git -C {q} apply --check -", stdin=patch.text.encode(), check=False)
    if not checked.ok:
        return explain_failure(patch, checked.stderr + checked.stdout, target=target)
    if not check_only:
        applied = _sh(host, f"git -C {q} apply -", stdin=patch.text.encode(), check=False)
        if not applied.ok:
            return explain_failure(patch, applied.stderr + applied.stdout, target=target)
    return PatchCheck(patch.name, True)


def _target_label(tree: LaunchTree) -> str:
    if tree.kind == "release-copy":
        return f"sglang=={tree.version}"
    commit = (tree.base_commit or "")[:12]
    return f"{tree.host.name}:{tree.repo} at {commit}"


def _import_origin(h: Host, tree: LaunchTree, python: str) -> str | None:
    code = "import importlib.util as u; s = u.find_spec('sglang'); print(s.origin if s else '')"
    env = tree.launch_env()
    out = h.run([python, "-c", code], env=env, cwd="/", check=False, timeout_s=60)
    origin = out.stdout.strip()
    return origin or None
