"""Run the stdlib-only scripts in ``remote/`` on a host: one JSON request in, one JSON answer out.

Work that must happen next to the files (an AST search of a source tree, GPU
inventory, checkout state) is done by small scripts in the repository's
``remote/`` directory, run with the host's ``python3`` in one round trip. The
protocol every script follows:

- the request is one JSON object on stdin;
- the answer is one JSON object on stdout;
- a refused request is answered ``{"ok": false, "error": "...", "kind": "request"}``
  with exit status 2, an unexpected failure with ``"kind": "internal"`` and exit 1.

Every script imports ``remote/_common.py`` (the protocol's reading, answering and
error handling, and ``/proc`` parsing) from its own directory; a script split into
several files also imports its own modules, ``remote/_<name>_<part>.py``, listed in
:data:`COMPANION_MODULES` (a script may import a sibling only if it is listed
there: :func:`helper_files` is what travels). Where the script lives on the host:
on :class:`~workbench.hosts.LocalHost` it is the file in this checkout's
``remote/``, beside them; on any other host they are uploaded once, side by side,
keyed by their content, with :func:`workbench.hosts._upload.ensure_files`
(``~/.cache/specbench-workbench/remote/<key>/{_common,<name>}.py``).
:func:`call_helper` runs an already-uploaded script in ONE command (it tests for
the file and runs it in the same shell line), so a batch of lookups costs one round
trip; only the first call after one of the script's files changed pays for the
upload.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

from workbench.errors import CommandError, CommandTimeout, ConfigError, HelperError
from workbench.hosts import CommandResult, Host, LocalHost, shell_path
from workbench.hosts._upload import DEFAULT_CACHE_DIR, ensure_files, files_key

#: The repository's ``remote/`` directory (scripts are found here, not installed as package data).
REMOTE_DIR = Path(__file__).resolve().parents[2] / "remote"
#: The module every helper imports from its own directory; uploaded beside each one.
COMMON_MODULE = REMOTE_DIR / "_common.py"
#: The modules a helper imports from its own directory besides ``_common.py`` (file names
#: in ``remote/``, in upload order); uploaded beside it.
COMPANION_MODULES: dict[str, tuple[str, ...]] = {
    "find_definitions": ("_find_definitions_index.py",),
    "server_flags": ("_server_flags_tree.py", "_server_flags_records.py"),
    "gpu_calibrate": ("_gpu_calibrate_plan.py", "_gpu_calibrate_torch.py"),
    "gpu_spec_step": ("_gpu_calibrate_plan.py", "_gpu_calibrate_torch.py", "gpu_calibrate.py", "_gpu_spec_kernels.py"),
}

#: Default limit for one helper run, in seconds.
DEFAULT_TIMEOUT_S = 120.0

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
#: Exit status (with :data:`_MISSING_MARK` on stderr) of the run line when the uploaded script is absent.
_MISSING_STATUS = 97
_MISSING_MARK = "__workbench_helper_missing__"


def local_script(name: str) -> Path:
    """The script ``remote/<name>.py`` in this checkout.

    Raises:
        ConfigError: ``name`` is not a plain lowercase identifier, or no such script exists.
    """
    if not _NAME.match(name):
        raise ConfigError(f"Remote helper name {name!r} must be a lowercase identifier such as 'find_definitions'.")
    path = REMOTE_DIR / f"{name}.py"
    if not path.is_file():
        known = sorted(p.stem for p in REMOTE_DIR.glob("[a-z]*.py")) if REMOTE_DIR.is_dir() else []
        raise ConfigError(
            f"No remote helper {name!r}: {path} does not exist (known helpers: {', '.join(known) or 'none'}). "
            "Remote helpers ship with the repository checkout; install the workbench with `pip install -e .`."
        )
    return path


def helper_files(name: str) -> list[Path]:
    """The files ``remote/<name>.py`` needs side by side, in upload order: ``_common.py``, its
    :data:`COMPANION_MODULES`, the script itself last.

    Raises:
        ConfigError: unknown helper name.
    """
    script = local_script(name)
    return [COMMON_MODULE, *(script.parent / module for module in COMPANION_MODULES.get(name, ())), script]


def helper_path(host: Host, name: str) -> str:
    """Path of the helper script ``name`` as ``host``'s python3 can open it (uploading it if needed).

    Args:
        host: where the script will run.
        name: script name without ``.py`` (a file in ``remote/``).

    Returns:
        A path on ``host``: this checkout's file on :class:`LocalHost`, else the
        content-keyed copy made by :func:`workbench.hosts._upload.ensure_files`, with
        the modules it imports beside it (:func:`helper_files`: one command to check
        for all of them, and SFTP uploads, ``_common.py`` first and the script last,
        only of what is missing).

    Raises:
        ConfigError: unknown helper name.
        HostError: the host cannot be reached or written.
    """
    files = helper_files(name)
    if isinstance(host, LocalHost):
        return str(files[-1])
    return ensure_files(host, files)[-1]


def remote_location(name: str) -> str:
    """Where :func:`helper_path` puts ``remote/<name>.py`` on a non-local host (``~/...``), without asking it.

    Raises:
        ConfigError: unknown helper name.
    """
    files = helper_files(name)
    key = files_key([(path.name, path.read_bytes()) for path in files])
    return f"{DEFAULT_CACHE_DIR.rstrip('/')}/{key}/{files[-1].name}"


def call_helper(
    host: Host,
    name: str,
    request: dict[str, Any],
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    python: str = "python3",
) -> dict[str, Any]:
    """Run ``remote/<name>.py`` on ``host`` with ``request`` as JSON on stdin; return its JSON answer.

    Args:
        host: where to run. ``LocalHost`` runs the script straight from the checkout;
            any other host runs its uploaded copy in one command (uploading it first
            when that copy is missing, see :func:`helper_path`).
        name: helper name, e.g. ``"find_definitions"``.
        request: JSON-serialisable request object.
        timeout_s: kill the helper after this many seconds (default 120).
        python: interpreter on the host (default ``python3``; helpers need 3.8+).

    Returns:
        The decoded answer (a dict with ``"ok": True``).

    Raises:
        ConfigError: unknown helper, or ``request`` is not JSON-serialisable.
        HostError: the helper cannot be uploaded to ``host`` or the host not reached.
        CommandTimeout: the helper ran past ``timeout_s``.
        HelperError: the helper ran and refused the request (e.g. the root directory
            does not exist); the message quotes its error. The source package turns
            it into a SourceError for its helpers (:mod:`workbench.source`).
        CommandError: the helper could not run or crashed (no answer, malformed answer,
            or an internal error); message has host, script, exit status and stderr tail.
    """
    local_script(name)
    try:
        payload = json.dumps(request).encode("utf-8")
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"Request for remote helper {name!r} is not JSON-serialisable: {exc}") from exc
    try:
        if isinstance(host, LocalHost):
            path = helper_path(host, name)
            result = host.run([python, path], stdin=payload, timeout_s=timeout_s, check=False)
        else:
            path, result = _run_uploaded(host, name, payload, timeout_s=timeout_s, python=python)
    except CommandTimeout as exc:
        raise CommandTimeout(
            f"Remote helper {name!r} on host {host.name!r} ran past {timeout_s} s; "
            f"pass a larger timeout_s or a smaller tree. {exc}",
            exc.result,
        ) from exc
    where = f"remote helper {name!r} ({path}) on host {host.name!r}"
    answer = last_json_object(result.stdout)
    if answer is None:
        raise CommandError(
            f"The {where} gave no JSON answer; does `{python}` exist there and is it Python 3.8 or newer? "
            f"{result.describe()}",
            result,
        )
    if answer.get("ok") is True and result.ok:
        return answer
    message = answer.get("error") or f"exit status {result.exit_status} without an error message"
    if answer.get("kind") == "request":
        tail = result.tail().strip()
        raise HelperError(
            f"The {where} refused the request: {message}" + (f"\n--- stderr ---\n{tail}" if tail else ""),
            result,
            helper=name,
            host=host.name,
            error=str(message),
        )
    trace = str(answer.get("traceback", "")).strip()
    message = f"The {where} failed: {message}\n{result.describe()}"
    raise CommandError(message + (f"\n--- helper traceback ---\n{trace}" if trace else ""), result)


def _run_uploaded(host: Host, name: str, payload: bytes, *, timeout_s: float, python: str) -> tuple[str, CommandResult]:
    """Run the uploaded copy of ``name`` on ``host`` in one command; upload it first only when it is absent.

    The shell line tests for the content-keyed file and ``exec``s the interpreter on
    it, or exits :data:`_MISSING_STATUS` with a marker on stderr; then the script is
    uploaded (:func:`helper_path`) and run once more.

    Returns:
        (path on the host, the command's result).
    """
    location = remote_location(name)
    line = (
        f'p={shell_path(location)}; if [ -f "$p" ]; then exec {shlex.quote(python)} "$p"; fi; '
        f"echo {_MISSING_MARK} >&2; exit {_MISSING_STATUS}"
    )
    result = host.run(line, stdin=payload, timeout_s=timeout_s, check=False)
    if result.exit_status != _MISSING_STATUS or _MISSING_MARK not in result.stderr:
        return location, result
    path = helper_path(host, name)
    return path, host.run([python, path], stdin=payload, timeout_s=timeout_s, check=False)


def last_json_object(stdout: str) -> dict[str, Any] | None:
    """The JSON object a command printed last: ``stdout`` whole, else its last line that is one (lines a
    script printed before its answer are skipped), or None when there is none."""
    for candidate in (stdout, *reversed(stdout.strip().splitlines())):
        try:
            answer = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(answer, dict):
            return answer
    return None
