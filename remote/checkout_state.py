#!/usr/bin/env python3
"""SGLang version, git commit and dirty state of checkouts and of the installed package, answer JSON.

Runs ON the GPU host with the interpreter whose environment should be inspected
(the one that will run ``python -m sglang.launch_server``), Python 3.8 or newer,
standard library only. Nothing from SGLang is imported: versions are read from the
text of ``sglang/version.py``, the installed package is located with
``importlib.util.find_spec`` (which does not run the package's ``__init__``) and its
distribution metadata, and git state comes from ``git -C <dir>`` (read-only:
``GIT_OPTIONAL_LOCKS=0``, so a status never takes the index lock of a tree someone
is editing).

Request (one JSON object on stdin)::

    {"paths": ["/root/sglang"],   # checkouts to inspect (optional; a repo root,
                                  #   its python/ dir, or the sglang package dir)
     "installed": true}           # also inspect the package this python imports (default true)

Answer::

    {"ok": true,
     "python": {"executable": ..., "version": "3.10.12"},
     "installed": null | {"package_dir", "version", "version_file", "distribution_version",
                          "editable", "direct_url", "git", "error"},
     "checkouts": [{"path", "package_dir", "version", "version_file", "git", "error"}]}

``git`` is null outside a work tree (or without git), else ``{"root", "commit",
"branch", "describe", "dirty", "changed", "changed_count", "error"}`` where
``changed`` lists at most 50 modified tracked files (untracked files do not make a
tree dirty). Errors follow the helpers' protocol: ``{"ok": false, "error", "kind"}``
with exit status 2 for a malformed request, 1 for an unexpected failure.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

sys.path[:0] = [os.path.dirname(os.path.abspath(__file__))]  # _common.py lies beside (also under python -I)
import _common  # noqa: E402
from _common import RequestError  # noqa: E402

MAX_CHANGED = 50
GIT_TIMEOUT_S = 30
_VERSION_RE = re.compile(r"""^__version__\s*(?::\s*str\s*)?=\s*['"]([^'"]+)['"]""", re.MULTILINE)


def read_version(package_dir):
    """(version, version_file) from ``<package_dir>/version.py``; (None, None) when absent."""
    path = os.path.join(package_dir, "version.py")
    try:
        with open(path, "r", encoding="utf-8", errors="replace") as fh:
            text = fh.read(65536)
    except OSError:
        return None, None
    match = _VERSION_RE.search(text)
    return (match.group(1) if match else None), path


def package_dir_of(path):
    """The ``sglang`` package directory inside a checkout path, or None.

    Accepts the repository root (``python/sglang``), its ``python`` directory
    (``sglang``) or the package directory itself.
    """
    path = os.path.abspath(os.path.expanduser(path))
    for candidate in (os.path.join(path, "python", "sglang"), os.path.join(path, "sglang"), path):
        if os.path.isfile(os.path.join(candidate, "__init__.py")) and os.path.basename(candidate) == "sglang":
            return candidate
    return None


def _git(directory, *args):
    env = dict(os.environ, GIT_OPTIONAL_LOCKS="0", LC_ALL="C", GIT_TERMINAL_PROMPT="0")
    proc = subprocess.run(
        ["git", "-c", "safe.directory=*", "-C", directory] + list(args),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        timeout=GIT_TIMEOUT_S,
    )
    return proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")


def _porcelain_paths(out):
    """Paths from ``git status --porcelain -z`` (a rename's origin path is skipped)."""
    paths, entries = [], out.split("\0")
    i = 0
    while i < len(entries):
        entry = entries[i]
        i += 1
        if len(entry) < 4:
            continue
        paths.append(entry[3:])
        if "R" in entry[:2] or "C" in entry[:2]:
            i += 1  # the next entry is where it was renamed or copied from
    return paths


def git_state(directory):
    """Git facts of the work tree holding ``directory``, or None when it is not in one (or git is missing)."""
    try:
        code, root, _ = _git(directory, "rev-parse", "--show-toplevel")
        root = root.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    if code != 0 or not root:
        return None
    state = {
        "root": root,
        "commit": None,
        "branch": None,
        "describe": None,
        "dirty": None,
        "changed": [],
        "changed_count": 0,
        "error": None,
    }
    try:
        code, out, err = _git(directory, "rev-parse", "HEAD")
        if code == 0:
            state["commit"] = out.strip()
        else:
            state["error"] = err.strip()[-300:] or "git rev-parse HEAD failed"
        code, out, _ = _git(directory, "rev-parse", "--abbrev-ref", "HEAD")
        if code == 0:
            state["branch"] = out.strip()
        code, out, _ = _git(directory, "describe", "--tags", "--always")
        if code == 0:
            state["describe"] = out.strip()
        code, out, err = _git(directory, "status", "--porcelain", "-z", "--untracked-files=no")
        if code == 0:
            changed = _porcelain_paths(out)
            state["dirty"] = bool(changed)
            state["changed_count"] = len(changed)
            state["changed"] = changed[:MAX_CHANGED]
        elif state["error"] is None:
            state["error"] = err.strip()[-300:] or "git status failed"
    except (OSError, subprocess.SubprocessError) as exc:
        state["error"] = "%s: %s" % (type(exc).__name__, exc)
    return state


def inspect_checkout(path):
    """Version and git state of a checkout path (see module docstring)."""
    entry = {"path": path, "package_dir": None, "version": None, "version_file": None, "git": None, "error": None}
    full = os.path.abspath(os.path.expanduser(path))
    if not os.path.isdir(full):
        entry["error"] = "no such directory"
        return entry
    pkg = package_dir_of(full)
    if pkg is None:
        entry["error"] = "no sglang package here (looked for python/sglang, sglang, or the package itself)"
    else:
        entry["package_dir"] = pkg
        entry["version"], entry["version_file"] = read_version(pkg)
    entry["git"] = git_state(pkg or full)
    return entry


def _distribution_facts():
    """(version, direct_url dict or None) of the installed ``sglang`` distribution, if any."""
    try:
        from importlib import metadata
    except ImportError:  # pragma: no cover - Python < 3.8
        return None, None
    try:
        dist = metadata.distribution("sglang")
    except Exception:  # noqa: BLE001 - PackageNotFoundError, or broken metadata
        return None, None
    direct = None
    try:
        text = dist.read_text("direct_url.json")
        direct = json.loads(text) if text else None
    except (OSError, ValueError):
        direct = None
    return dist.version, direct


def inspect_installed():
    """The ``sglang`` package this interpreter would import, or None when there is none."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("sglang")
    except (ImportError, ValueError) as exc:
        return {
            "package_dir": None,
            "version": None,
            "version_file": None,
            "distribution_version": None,
            "editable": False,
            "direct_url": None,
            "git": None,
            "error": "%s: %s" % (type(exc).__name__, exc),
        }
    if spec is None:
        return None
    locations = list(spec.submodule_search_locations or [])
    if spec.origin and spec.origin not in ("namespace", "built-in"):
        package_dir = os.path.dirname(spec.origin)
    else:
        package_dir = locations[0] if locations else None
    dist_version, direct = _distribution_facts()
    entry = {
        "package_dir": package_dir,
        "version": None,
        "version_file": None,
        "distribution_version": dist_version,
        "direct_url": direct,
        "editable": bool(direct and (direct.get("dir_info") or {}).get("editable")),
        "git": None,
        "error": None,
    }
    if package_dir:
        entry["version"], entry["version_file"] = read_version(package_dir)
        entry["git"] = git_state(package_dir)
    if entry["version"] is None:
        entry["version"] = dist_version
    return entry


def parse_request(raw):
    """The request object from stdin bytes (empty input means the defaults)."""
    request = _common.load_request(raw, empty_means_defaults=True)
    paths = request.get("paths", [])
    if not isinstance(paths, list) or not all(isinstance(p, str) and p for p in paths):
        raise RequestError("'paths' must be a list of non-empty strings")
    return request


def answer(request):
    """The answer object for a parsed request."""
    return {
        "ok": True,
        "python": {"executable": sys.executable, "version": "%d.%d.%d" % sys.version_info[:3]},
        "installed": inspect_installed() if request.get("installed", True) else None,
        "checkouts": [inspect_checkout(p) for p in request.get("paths", [])],
    }


def main():
    """Read the request from stdin, write the answer to stdout; return the exit status."""
    return _common.serve(lambda raw: answer(parse_request(raw)))


if __name__ == "__main__":
    sys.exit(main())
