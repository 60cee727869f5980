"""Check a variant's patches against a version, and show the functions they change, without a full copy.

:func:`trial_apply` builds a scratch tree holding only the files the patches touch
(from the release in the local cache, or ``git show <commit>:<path>`` of a
checkout on its host), checks and applies the patches there in order, and returns
each touched file before and after. Nothing of the user's is touched and the
scratch tree is removed. :func:`patched_changes` turns that into one
:class:`workbench.source._history.Change` per function or class a patch changes,
for :func:`workbench.source.diff_panes`.
"""

from __future__ import annotations

import ast
import dataclasses
import shlex
import shutil
import tempfile
from pathlib import Path

from workbench.errors import ConfigError, HostError
from workbench.hosts import Host, LocalHost, get_host
from workbench.variants._variant import Variant
from workbench.source import Change, unified_diff
from workbench.source import sglang_release
from workbench.variants._patchfile import Patch, PatchCheck, load_patch
from workbench.variants._rules import tree_version
from workbench.variants._trees import _sh, apply_patch, make_scratch_dir, same_host

_PKG = "python/"


@dataclasses.dataclass(frozen=True)
class TrialResult:
    """What applying a variant's patches to a base looked like.

    Attributes:
        target: what they were applied to (``"sglang==0.5.9"``, ``"gpu1:/root/sglang at 1a2b3c4d5e6f"``).
        version: the SGLang version of the target (None when unknown).
        checks: one :class:`PatchCheck` per patch tried, in order (stops at the first failure).
        files: repository-relative path -> (text before, text after) for every touched file
            that exists in the target (after == before when a patch failed before reaching it).
    """

    target: str
    version: str | None
    checks: list[PatchCheck]
    files: dict[str, tuple[str, str]]

    @property
    def ok(self) -> bool:
        """True when every patch applied."""
        return all(c.ok for c in self.checks)


def touched_paths(patches: list[Patch]) -> list[str]:
    """Repository-relative paths the patches read (old side), in first-seen order."""
    return list(dict.fromkeys(f.old_path for p in patches for f in p.files if f.old_path))


def trial_apply(variant: Variant, *, version: str | None = None, host: str | Host = "local") -> TrialResult:
    """Check and apply ``variant``'s patches in a scratch tree of its base (or of release ``version``).

    Args:
        variant: the variant.
        version: a release to try the patches on instead of the variant's base.
        host: the host a ``host:`` checkout base refers to.

    Raises:
        ConfigError: the variant has no patches, or no base and no ``version``.
        SourceError: the release could not be fetched.
        HostError: the checkout's host cannot be reached.
    """
    patches = [load_patch(p) for p in variant.patches]
    if not patches:
        raise ConfigError(f"variant {variant.name!r} has no patches")
    base = variant.parsed_base
    if version is None and base.kind == "release":
        version = base.version
    if version is None and base.kind == "installed":
        version = variant.sglang_version
    if version is not None:
        return _trial_on_release(patches, version)
    if base.kind != "checkout":
        raise ConfigError(f"variant {variant.name!r} has patches but no base or sglang_version to apply them to")
    h = get_host(host)
    checkout_host = get_host(base.host_for(h.name)) if not same_host(base.host_for(h.name), h.name) else h
    return _trial_on_checkout(patches, checkout_host, str(base.path))


def _trial_on_release(patches: list[Patch], version: str) -> TrialResult:
    release = sglang_release(version)
    scratch = Path(tempfile.mkdtemp(prefix="workbench-patch-check-"))
    try:
        for rel in touched_paths(patches):
            src = release.root / rel[len(_PKG) :] if rel.startswith(_PKG) else release.root / rel
            if src.is_file():
                (scratch / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, scratch / rel)
        return _run_trial(LocalHost(), str(scratch), patches, target=f"sglang=={version}", version=version)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _trial_on_checkout(patches: list[Patch], h: Host, repo: str) -> TrialResult:
    q = shlex.quote
    head = _sh(h, f"git -C {q(repo)} rev-parse HEAD", check=False)
    if not head.ok or not head.stdout.strip():
        raise ConfigError(f"{repo} on host {h.name!r} is not a git checkout: {head.describe()}")
    commit, version = head.stdout.strip(), tree_version(h, f"{repo}/python/sglang")
    scratch = make_scratch_dir(h, "patch-check")
    try:
        copies = "; ".join(
            f"mkdir -p {q(str(Path(scratch, rel).parent))} && "
            f"git -C {q(repo)} show {q(commit + ':' + rel)} > {q(scratch + '/' + rel)} 2>/dev/null "
            f"|| rm -f {q(scratch + '/' + rel)}"
            for rel in touched_paths(patches)
        )
        _sh(h, copies or "true", check=False)
        return _run_trial(h, scratch, patches, target=f"{h.name}:{repo} at {commit[:12]}", version=version)
    finally:
        _sh(h, f"rm -rf {q(scratch)}", check=False)


def _run_trial(h: Host, root: str, patches: list[Patch], *, target: str, version: str | None) -> TrialResult:
    q = shlex.quote(root)
    _sh(h, f"git -C {q} init -q")
    before = _read_files(h, root, touched_paths(patches))
    checks = []
    for patch in patches:
        check = apply_patch(h, root, patch, target=target)
        checks.append(check)
        if not check.ok:
            break
    after = _read_files(h, root, list(before))
    return TrialResult(target, version, checks, {p: (before[p], after.get(p, "")) for p in before})


def _read_files(h: Host, root: str, paths: list[str]) -> dict[str, str]:
    """``paths`` under ``root`` on ``h`` as text; a file the target lacks is left out.

    Raises:
        HostError: any other failure to read (a dropped connection, a permission
            error), with a note naming the scratch tree; never taken for a missing file.
    """
    out = {}
    for rel in paths:
        path = f"{root}/{rel}"
        try:
            out[rel] = h.read_bytes(path).decode("utf-8", errors="replace")
        except HostError as exc:
            if _missing_file(exc):
                continue  # the target has no such file: nothing to show for it
            exc.add_note(f"while reading {path} in the patch-check scratch tree on host {h.name!r}")
            raise
    return out


def _missing_file(exc: HostError) -> bool:
    """True when a host's ``read_bytes`` failed because the file does not exist.

    Both hosts raise a plain :class:`HostError` chained to the ``FileNotFoundError``
    (``open`` on this machine, SFTP's ``ENOENT`` over SSH); a dropped connection is a
    :class:`ConnectionLost` and a refused read another ``OSError``, so neither matches.
    """
    return type(exc) is HostError and isinstance(exc.__cause__, FileNotFoundError)


def patched_changes(trial: TrialResult, *, context: int = 3) -> list[Change]:
    """One :class:`Change` per function, method or class whose text a patch changed.

    Definitions are matched by qualified name between the file before and after; the
    innermost definition containing a changed line is reported (a new method is
    shown as added). Module-level changes (imports) are reported as ``<module>``.

    Args:
        trial: a successful or partial :func:`trial_apply` result.
        context: unchanged lines around each hunk.
    """
    changes = []
    label = trial.version or trial.target
    for path, (old, new) in trial.files.items():
        if old == new:
            continue
        old_defs, new_defs = _definitions(old), _definitions(new)
        touched = [q for q in dict.fromkeys([*new_defs, *old_defs])
                   if old_defs.get(q, (0, 0, ""))[2] != new_defs.get(q, (0, 0, ""))[2]]  # fmt: skip
        innermost = [q for q in touched if not any(o != q and o.startswith(q + ".") for o in touched)]
        for qual in innermost or ["<module>"]:
            o_start, _, o_src = old_defs.get(qual, (1, 0, "" if qual != "<module>" else old))
            n_start, _, n_src = new_defs.get(qual, (1, 0, "" if qual != "<module>" else new))
            diff = unified_diff(o_src, n_src, old_start=o_start, new_start=n_start, context=context,
                                fromfile=f"{label}/{path}", tofile=f"{label}+patch/{path}")  # fmt: skip
            changes.append(Change(qualname=qual, old_version=label, new_version=f"{label} + patch",
                                  old_path=path, new_path=path, old_start=o_start, new_start=n_start,
                                  old_source=o_src, new_source=n_src, diff=diff))  # fmt: skip
    return changes


def _definitions(text: str) -> dict[str, tuple[int, int, str]]:
    """qualname -> (first line, last line, source) of every def and class (decorators included)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return {}
    lines = text.splitlines(keepends=True)
    out: dict[str, tuple[int, int, str]] = {}

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                qual = f"{prefix}{child.name}"
                start = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                end = child.end_lineno or child.lineno
                out[qual] = (start, end, "".join(lines[start - 1 : end]))
                walk(child, qual + ".")

    walk(tree, "")
    return out
