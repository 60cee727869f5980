"""Run one parameterized notebook with papermill and export it as an offline HTML report.

For a notebook ``notebooks/spec_vs_baseline.ipynb`` and ``out_dir="reports"``:

- ``reports/spec_vs_baseline.ipynb``: the executed notebook (papermill's injected
  parameters cell, outputs, provenance in ``metadata["workbench"]``);
- ``reports/spec_vs_baseline.html``: the same as one offline page;
- ``reports/spec_vs_baseline/``: ``report_dir``, where the notebook saves chart files.

The kernel runs in the notebook's own folder, as in JupyterLab, so relative paths
in a notebook mean the same in both.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import signal
import re
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import nbformat

from workbench import paths
from workbench.errors import ConfigError, DiskFullError, ReportError

from workbench.report._discovery import DEFAULT_OUT_DIR
from workbench.report._html import export_html, external_resources
from workbench.report._interrupt import KernelProcesses
from workbench.report._kernel_run import execute
from workbench.report._params import check_parameters, notebook_parameters
from workbench.report._progress import collecting_notes
from workbench.report._provenance import git_state, provenance

#: Exception names raised in a notebook that mean its input was bad (``workbench report`` exits 2).
BAD_INPUT_ERRORS = frozenset({"ConfigError", "FlagError"})

__all__ = ["DEFAULT_KERNEL", "DEFAULT_OUT_DIR", "NO_SPACE", "ReportResult", "run_notebook"]

#: errno values that mean "no room": a full disk, an exhausted quota, a file-size limit.
NO_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})

#: The IPython kernel of the environment running the workbench.
DEFAULT_KERNEL = "python3"


@dataclasses.dataclass(frozen=True)
class ReportResult:
    """What one successful notebook run produced.

    Attributes:
        notebook: the input notebook (absolute).
        executed: the executed notebook, ``<out_dir>/<stem>.ipynb``.
        html: the offline HTML report, ``<out_dir>/<stem>.html``.
        report_dir: the folder the notebook was told to save charts in.
        charts: PNG and SVG files written under ``report_dir`` during this run, sorted.
        parameters: the parameters injected, ``report_dir`` included.
        started_at: when execution began (UTC).
        finished_at: when the HTML was written (UTC).
        notes: lines the notebook's kernel asked to be said after the report's paths
            (:func:`workbench.report.report_note`: a run the report set aside, with why), each once.
    """

    notebook: Path
    executed: Path
    html: Path
    report_dir: Path
    charts: tuple[Path, ...]
    parameters: dict[str, Any]
    started_at: datetime
    finished_at: datetime
    notes: tuple[str, ...] = ()

    @property
    def duration_s(self) -> float:
        """Wall-clock time of the run, in seconds."""
        return (self.finished_at - self.started_at).total_seconds()


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _absolute_report_dir(value: Any) -> str:
    """A user-given ``report_dir`` as an absolute path (the kernel runs elsewhere)."""
    if not isinstance(value, (str, Path)):
        raise ConfigError(f"parameter report_dir must be a path, got {value!r}")
    return str(Path(value).expanduser().resolve())


def _new_charts(report_dir: Path, since: datetime) -> tuple[Path, ...]:
    if not report_dir.is_dir():
        return ()
    cutoff = since.timestamp() - 1.0
    return tuple(
        sorted(
            p
            for p in report_dir.rglob("*")
            if p.suffix.lower() in (".png", ".svg") and p.is_file() and p.stat().st_mtime >= cutoff
        )
    )


def _finish(executed: Path, html: Path, record: dict[str, Any]) -> list[str]:
    """Stamp provenance into the executed notebook, export HTML; return remote references found."""
    nb = nbformat.read(str(executed), as_version=4)
    nb.metadata["workbench"] = record
    nbformat.write(nb, str(executed))
    export_html(nb, html)
    return external_resources(html.read_text(encoding="utf-8"))


def _no_space(exc: OSError) -> bool:
    """True when ``exc`` says there was no room (its errno, else ``[Errno 28]`` in its text, as pyarrow and a
    cell's error value give it)."""
    if exc.errno is not None:
        return exc.errno in NO_SPACE
    found = re.search(r"\[Errno (\d+)\]", str(exc))
    return (found is not None and int(found.group(1)) in NO_SPACE) or "No space left on device" in str(exc)


def _disk_full(
    exc: OSError, *, source: Path, executed: Path, html: Path, kernels: KernelProcesses, runs_dir: Any
) -> DiskFullError:
    """The one-line error for a report that ran out of room, once what it left is made safe.

    The kernel is stopped if still running (SIGKILL to its process group); the executed notebook and the
    HTML, half-written or stale, are removed, so nothing there reads as a finished report; each run that
    this report's kernel was writing (its sweep lock names the kernel's process) is marked ``failed`` with
    "disk full" instead of staying ``running`` for ever (:func:`_fail_runs`).
    """
    kernels.signal_all(signal.SIGKILL)
    removed = []
    for path in (executed, html):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
            removed.append(path.name)
    where = getattr(exc, "filename", None) or executed
    failed, unmarked = _fail_runs(
        runs_dir,
        kernels.pids(),
        f"disk full: {where} could not be written "
        f"({exc.strerror or 'no space left on device'}) while {source.name} ran",
    )
    runs = f"; run{'s' if len(failed) > 1 else ''} {', '.join(failed)} marked failed" if failed else ""
    runs += (
        f"; run{'s' if len(unmarked) > 1 else ''} {', '.join(unmarked)} could not be marked failed (its "
        "disk is full too)"
        if unmarked
        else ""
    )
    return DiskFullError(
        f"disk full: cannot write {where} ({exc.strerror or 'no space left on device'}) while running "
        f"{source.name}; no report was written"
        + (f" (the partial {' and '.join(removed)} removed)" if removed else "")
        + runs
        + ". Free space or choose -o elsewhere, then run it again",
        path=str(where),
    )


def _fail_runs(runs_dir: Any, pids: set[int], error: str) -> tuple[list[str], list[str]]:
    """Mark ``failed`` with ``error`` each run under ``runs_dir`` whose sweep lock names one of ``pids`` and
    whose manifest still says ``running`` or ``interrupted``; returns (run ids marked, run ids that could
    not be written). ``runs_dir`` as the notebook reads it (None: ``$WORKBENCH_RUNS_DIR`` or data/runs)."""
    if not pids:
        return [], []
    from workbench.errors import HostError
    from workbench.store import fail_unfinished_run, lock_owner, runs_root

    root = runs_root(paths.resolve(runs_dir) if isinstance(runs_dir, (str, Path)) else None)
    marked, unmarked = [], []
    for lock in sorted(root.glob("*/sweep.lock")) if root.is_dir() else []:
        _, held = lock_owner(lock.parent)
        try:
            if int(held.get("pid") or 0) not in pids:
                continue
        except (TypeError, ValueError):
            continue
        try:
            if fail_unfinished_run(lock.parent, error):
                marked.append(lock.parent.name)
        except HostError:
            unmarked.append(lock.parent.name)
    return marked, unmarked


def run_notebook(
    notebook_path: str | Path,
    *,
    out_dir: str | Path = DEFAULT_OUT_DIR,
    parameters: Mapping[str, Any] | None = None,
    kernel_name: str | None = None,
    cell_timeout_s: float | None = None,
    progress: bool = False,
    progress_label: str | None = None,
) -> ReportResult:
    """Execute a notebook with papermill and export it as an offline HTML report.

    Parameters are checked against the notebook's ``parameters`` cell before
    anything runs. ``report_dir`` is injected unless given (default
    ``<out_dir>/<stem>``, made absolute; the folder is created when the notebook
    declares ``report_dir``). On a cell error the executed notebook is kept as
    papermill saved it, its HTML is still exported, and :class:`ReportError` is
    raised.

    Args:
        notebook_path: the ``.ipynb`` to run; it is not modified.
        out_dir: directory for ``<stem>.ipynb``, ``<stem>.html`` and the default
            ``report_dir``; created when missing (default ``reports``).
        parameters: values for names in the notebook's ``parameters`` cell.
        kernel_name: Jupyter kernel to use (default ``python3``: the IPython kernel
            of the environment the workbench runs in, whatever the notebook names).
        cell_timeout_s: fail a cell that runs longer (seconds; default no limit).
        progress: print the notebook's progress lines on stderr as they come (one per measured
            level: :func:`workbench.report.report_progress`); notebooks then show no progress
            bars of their own.
        progress_label: put ``[label]`` before each progress line (None: nothing), so the lines of
            notebooks run at once can be told apart (``workbench report`` gives each its name).

    Returns:
        A :class:`ReportResult` naming every file written.

    Raises:
        ConfigError: the notebook does not exist, is unreadable, would be
            overwritten by its own output, or a parameter is unknown (nothing ran).
        ReportError: the kernel could not start, a cell failed or timed out, or the
            HTML would fetch something from the network (the partial or complete
            output notebook and HTML are kept; the message names them).
        DiskFullError: no room to write the report (or for a file a cell writes): one line; the
            half-written executed notebook and HTML are removed, the kernel stopped, and each run its
            sweep lock shows the kernel was writing is marked ``failed`` with "disk full" (:func:`_disk_full`).
    """
    source = Path(notebook_path).expanduser().resolve()
    if source.suffix != ".ipynb":
        raise ConfigError(f"{source} is not a notebook (.ipynb)")
    given = dict(parameters or {})
    declared = notebook_parameters(source)
    check_parameters(source, given, declared)

    out = Path(out_dir).expanduser().resolve()
    executed = out / f"{source.stem}.ipynb"
    html = out / f"{source.stem}.html"
    if executed == source:
        raise ConfigError(
            f"out_dir {out} is the notebook's own folder: the executed copy would overwrite {source.name}; "
            "choose another out_dir (default 'reports')."
        )
    report_dir = Path(_absolute_report_dir(given["report_dir"])) if "report_dir" in given else out / source.stem
    # injected as a report shows it (relative to the project or ~): the notebooks read it with
    # workbench.paths.resolve, and the shared report prints no absolute path of this machine
    given["report_dir"] = paths.shown(report_dir)
    kernel = kernel_name or DEFAULT_KERNEL
    git = git_state(source.parent)
    started = _now()
    kernels = KernelProcesses()
    try:
        out.mkdir(parents=True, exist_ok=True)
        if "report_dir" in declared or "report_dir" in (parameters or {}):
            report_dir.mkdir(parents=True, exist_ok=True)
        return _run_and_finish(
            source,
            executed,
            html,
            report_dir,
            given=given,
            declared=declared,
            kernel=kernel,
            git=git,
            started=started,
            cell_timeout_s=cell_timeout_s,
            progress=progress,
            progress_label=progress_label,
            kernels=kernels,
        )
    except OSError as exc:
        if _no_space(exc):
            raise _disk_full(
                exc, source=source, executed=executed, html=html, kernels=kernels, runs_dir=given.get("runs_dir")
            ) from exc
        raise


def _run_and_finish(
    source: Path,
    executed: Path,
    html: Path,
    report_dir: Path,
    *,
    given: dict[str, Any],
    declared: Mapping[str, Any],
    kernel: str,
    git: Any,
    started: datetime,
    cell_timeout_s: float | None,
    progress: bool,
    progress_label: str | None,
    kernels: KernelProcesses,
) -> ReportResult:
    """:func:`run_notebook` from the kernel's start on: execute, stamp provenance, export, check the page.

    Raises:
        OSError: a file could not be written (papermill's saves of the executed notebook, the HTML), or a
            cell failed on a full disk (the cell's ``OSError`` raised again here, so both are one case).
        ReportError: as :func:`run_notebook`.
    """
    with collecting_notes(executed.with_name(f".{executed.stem}.notes")) as notes:
        failure, error_info = execute(
            source,
            executed,
            parameters=given,
            kernel=kernel,
            cell_timeout_s=cell_timeout_s,
            progress=progress,
            progress_label=progress_label,
            kernels=kernels,
        )
    if (
        failure is not None
        and error_info.get("ename") in ("OSError", "DiskFullError")
        and _no_space(OSError(str(error_info.get("evalue", ""))))
    ):  # a cell that could not write: the same full disk
        named = re.search(r": '(.+)'$", str(error_info.get("evalue", "")))
        raise OSError(
            errno.ENOSPC,
            f"no space left on device, in cell {error_info.get('cell')}",
            named.group(1) if named else str(executed),
        ) from failure
    record = provenance(
        notebook=source,
        parameters=given,
        kernel_name=kernel,
        started_at=started,
        finished_at=_now(),
        status="failed" if failure else "ok",
        git=git,
        error=error_info or None,
        defaults={name: param.default for name, param in declared.items() if name not in given},
    )
    if failure is not None:
        kept = f"The partial output is kept in {executed} (HTML: {html})"
        if executed.exists():
            _finish(executed, html, record)
        else:
            kept = "No output notebook was written"
        where = ""
        if error_info["cell"]:
            where = f" in cell {error_info['cell']}" + (f" (`{error_info['source']}`)" if error_info["source"] else "")
        error = ReportError(
            f"notebook {source} failed{where}: {error_info['ename']}: {error_info['evalue']}. "
            f"{kept}; open it to read the traceback, then fix the notebook or its parameters and re-run."
        )
        # The notebook refused its input (a parameter, a variant file): bad input, exit status 2.
        error.bad_input = error_info["ename"] in BAD_INPUT_ERRORS
        raise error from failure

    remote = _finish(executed, html, record)
    if remote:
        raise ReportError(
            f"report {html} would fetch {len(remote)} resource(s) from the network: {'; '.join(remote[:5])}. "
            "Render altair charts offline: call workbench.charts.enable_offline_renderer() in the notebook's "
            "first code cell, and display no HTML that loads remote scripts."
        )
    return ReportResult(
        notebook=source,
        executed=executed,
        html=html,
        report_dir=report_dir,
        charts=_new_charts(report_dir, started),
        parameters=given,
        started_at=started,
        finished_at=_now(),
        notes=tuple(notes),
    )
