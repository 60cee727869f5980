"""One notebook executed by papermill on a kernel of its own: what :func:`workbench.report._runner.run_notebook` runs.

:func:`execute` starts the kernel with its IPC sockets in a folder of its own (:func:`_kernel_sockets`: two
kernels started at once from one folder would share socket names), its process's stderr in a log file beside
the executed notebook and its process recorded for Ctrl-C (:func:`_kernel_manager`), and the notebook's
progress lines tailed to the terminal while it runs. A cell that fails, a cell that runs over the timeout and a
kernel that dies are returned as the failure and a record of it (the cell, its failing line, the exception's
name and value); only a kernel that does not exist is raised.
"""

from __future__ import annotations

import contextlib
import logging
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import nbformat

from workbench.errors import ReportError
from workbench.report._interrupt import KernelProcesses, run_interruptibly
from workbench.report._progress import CellWatch, executed_sources, progress_lines


class _QuietReportDir(logging.Filter):
    """Drops papermill's warning about ``report_dir`` in notebooks that do not declare it."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != "Passed unknown parameter: report_dir"


def _first_line(source: str, limit: int = 80) -> str:
    lines = [line for line in source.splitlines() if line.strip()]
    line = lines[0].strip() if lines else ""
    return line if len(line) <= limit else line[: limit - 3] + "..."


#: The notebook cell's own frame in an IPython 8 traceback: ``Cell In[3], line 7``.
_CELL_FRAME = re.compile(r"Cell In\s*\[\d*\],\s*line (\d+)")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _failing_line(source: str, traceback: list[str] | None, limit: int = 80) -> str:
    """The line of ``source`` the cell failed at (its frame in ``traceback``), else its first line."""
    found = _CELL_FRAME.search(_ANSI.sub("", "\n".join(traceback or [])))
    lines = source.splitlines()
    if found and 1 <= int(found.group(1)) <= len(lines) and lines[int(found.group(1)) - 1].strip():
        return _first_line(lines[int(found.group(1)) - 1], limit)
    return _first_line(source, limit)


def execute(
    source: Path,
    executed: Path,
    *,
    parameters: dict[str, Any],
    kernel: str,
    cell_timeout_s: float | None,
    progress: bool,
    progress_label: str | None = None,
    kernels: KernelProcesses | None = None,
) -> tuple[BaseException | None, dict[str, Any]]:
    """Run papermill; return (the failure or None, what to record about it).

    Raises:
        ReportError: the kernel does not exist (nothing ran).
    """
    import papermill
    from jupyter_client.kernelspec import NoSuchKernel
    from nbclient.exceptions import CellTimeoutError
    from papermill.exceptions import PapermillExecutionError

    from traitlets.config import Config

    has_language = nbformat.read(str(source), as_version=4).metadata.get("kernelspec", {}).get("language")
    kernel_log = executed.with_name(f".{executed.stem}.kernel.log")
    quiet = _QuietReportDir()
    logging.getLogger("papermill").addFilter(quiet)
    progress_file = executed.with_name(f".{executed.stem}.progress")
    papermill_log = logging.getLogger("papermill")
    watch = CellWatch(executed_sources(nbformat.read(str(source), as_version=4).cells)) if progress else None
    # the kernel inherits the progress file's name (report_progress)
    prefix = f"  [{progress_label}] " if progress_label else "  "
    tail = (
        progress_lines(progress_file, stream=sys.stderr, cells=watch, prefix=prefix)
        if progress
        else contextlib.nullcontext()
    )
    propagate, level = papermill_log.propagate, papermill_log.level
    sockets = _kernel_sockets()
    kernels = kernels if kernels is not None else KernelProcesses()
    if watch is not None:  # papermill's records only reach the watch: the cells' own output stays in the notebook
        papermill_log.addHandler(watch)
        papermill_log.propagate = False
        papermill_log.setLevel(logging.INFO)
    try:
        with tail:
            run_interruptibly(
                lambda: papermill.execute_notebook(
                    str(source),
                    str(executed),
                    parameters=parameters,
                    kernel_name=kernel,
                    language=None if has_language else "python",
                    cwd=str(source.parent),
                    progress_bar=False,
                    log_output=watch is not None,  # "Executing Cell N" records for the watch
                    execution_timeout=cell_timeout_s,
                    # IPC sockets, not TCP: the kernel and papermill share this machine, and ipykernel
                    # warns on every start that unencrypted TCP can be eavesdropped (ipykernel 7); in a
                    # folder of this run's own (_kernel_sockets), never shared with another kernel.
                    config=Config({"KernelManager": {"transport": "ipc", "ip": str(sockets / "kernel")}}),
                    kernel_manager_class=_kernel_manager(kernel_log, kernels),
                ),
                kernels,
            )  # Ctrl-C: the cell interrupted, the kernel stopped, then KeyboardInterrupt (_interrupt.py)
    except NoSuchKernel as exc:
        raise ReportError(
            f"cannot run {source}: no Jupyter kernel named {kernel!r} in this environment. "
            "Register it with `python -m ipykernel install --sys-prefix --name python3` "
            "(`make report` does), or pass kernel_name."
        ) from exc
    except PapermillExecutionError as exc:
        return exc, {
            "cell": f"In [{exc.exec_count}]",
            "source": _failing_line(exc.source, exc.traceback),
            "ename": exc.ename,
            "evalue": exc.evalue,
        }
    except CellTimeoutError as exc:
        return exc, {
            "cell": None,
            "source": "",
            "ename": "CellTimeoutError",
            "evalue": f"a cell ran over the {cell_timeout_s} s cell timeout ({exc})",
        }
    except RuntimeError as exc:  # nbclient's DeadKernelError and kernel start-up failures
        return exc, {"cell": None, "source": "", "ename": type(exc).__name__, "evalue": str(exc)}
    finally:
        shutil.rmtree(sockets, ignore_errors=True)
        logging.getLogger("papermill").removeFilter(quiet)
        if kernel_log.is_file() and not kernel_log.stat().st_size:
            kernel_log.unlink()
        if watch is not None:
            papermill_log.removeHandler(watch)
            papermill_log.propagate = propagate
            papermill_log.setLevel(level)
    return None, {}


#: The longest folder path for a kernel's IPC sockets: a Unix socket's path is at most 107 bytes (Linux
#: ``sun_path``), and the socket names add ``/kernel-N``.
_SOCKET_DIR_MAX = 90


def _kernel_sockets() -> Path:
    """A new private folder (mode 0700) for one kernel's IPC sockets, removed by the caller.

    jupyter_client names a kernel's IPC sockets ``kernel-ipc-1`` ... ``kernel-ipc-5`` relative to the
    working directory unless told otherwise, and picks the numbers by which files exist *before* the
    kernel binds them. Two kernels started at once from one folder (papermill changes into the notebook's
    folder; the reports' notebooks share one) then take the same five names, the second binding over the
    first's sockets, and a client reads the other kernel's messages, signed with another key:
    jupyter_client's "Invalid Signature". A folder per kernel keeps every kernel's sockets its own.
    """
    base = tempfile.gettempdir()
    return Path(tempfile.mkdtemp(prefix="wb-kernel-", dir=base if len(base) < _SOCKET_DIR_MAX - 20 else "/tmp"))


def _kernel_manager(log: Path, kernels: KernelProcesses) -> type:
    """A kernel manager whose kernel writes its own process's stderr to ``log``, not to this terminal, and
    whose kernel process is recorded in ``kernels`` (for Ctrl-C: :func:`workbench.report._interrupt.run_interruptibly`).

    The cells' output reaches the notebook through the kernel's messages either way; the process's
    stderr holds only the kernel's own log lines, such as the ZMQ traceback ipykernel prints when it
    is shut down in the middle of a cell (Ctrl-C of ``workbench report``). The file is removed when
    the run left it empty.
    """
    from jupyter_client.manager import AsyncKernelManager

    class _LoggedKernelManager(AsyncKernelManager):
        async def _async_launch_kernel(self, kernel_cmd: list[str], **kw: Any) -> None:
            with open(log, "ab") as stderr:  # the kernel keeps its own descriptor
                kw.setdefault("stderr", stderr)
                await super()._async_launch_kernel(kernel_cmd, **kw)
            kernels.add(getattr(self.provisioner, "process", None))  # jupyter_client 8's LocalProvisioner

    return _LoggedKernelManager
