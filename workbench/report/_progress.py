"""Progress a person can follow while papermill runs a notebook: lines from the kernel to the terminal.

papermill keeps a cell's output in the notebook and shows at most a bar of cells, so a
sweep that measures for minutes inside one cell says nothing on the terminal. The
protocol here is a file: :func:`run_notebook <workbench.report.run_notebook>` names one in
the environment variable :data:`PROGRESS_FILE_ENV` before the kernel starts (the kernel
inherits the environment), code in the kernel appends one line per step with
:func:`report_progress`, and :class:`ProgressTail` prints each new line on stderr as it
arrives. Outside ``workbench report`` (JupyterLab, a script) the variable is unset and
:func:`report_progress` does nothing, so notebooks show their own progress bars there.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, TextIO

__all__ = [
    "NOTES_FILE_ENV",
    "PROGRESS_FILE_ENV",
    "CellWatch",
    "ProgressTail",
    "collecting_notes",
    "executed_sources",
    "progress_bars",
    "progress_lines",
    "report_note",
    "report_progress",
    "reporting_progress",
]

#: The environment variable that names the progress file of the notebook being run.
PROGRESS_FILE_ENV = "WORKBENCH_PROGRESS_FILE"

#: The environment variable that names the notes file of the notebook being run (:func:`report_note`).
NOTES_FILE_ENV = "WORKBENCH_REPORT_NOTES"


def reporting_progress() -> bool:
    """True inside a notebook run by ``workbench report`` (progress goes to its terminal as lines)."""
    return bool(os.environ.get(PROGRESS_FILE_ENV))


def progress_bars(progress: bool | None) -> bool:
    """Whether to draw tqdm bars: ``progress`` as given; None (the notebooks' and ``workbench bench``'s
    default) draws them where someone watches them redrawn: in a Jupyter kernel (a widget) or when
    stderr is a terminal. Not under ``workbench report``, whose terminal gets lines instead and whose
    exported page would keep a bar's first frame, and not when stderr is a file or a pipe (a log,
    CI), where a bar is carriage-return noise: there :func:`progress_lines` prints one line per level."""
    if progress is not None:
        return bool(progress)
    if reporting_progress():
        return False
    return _in_kernel() or sys.stderr.isatty()


def _in_kernel() -> bool:
    """True in a Jupyter kernel (JupyterLab, a notebook): IPython's running shell has a kernel."""
    ipython = sys.modules.get("IPython")  # never imported here: a kernel has imported it already
    shell = ipython.get_ipython() if ipython is not None and hasattr(ipython, "get_ipython") else None
    return shell is not None and getattr(shell, "kernel", None) is not None


def report_progress(line: str) -> bool:
    """Append ``line`` to the progress file ``workbench report`` tails; False (nothing written) outside it.

    A line that cannot be written (the file's folder is gone) is dropped: progress never
    stops a measurement.
    """
    return _append_line(PROGRESS_FILE_ENV, line)


def _append_line(variable: str, line: str) -> bool:
    """Append ``line`` (one line: newlines become spaces) to the file the environment variable names; False when
    none is named or it cannot be written."""
    path = os.environ.get(variable)
    if not path:
        return False
    try:
        with open(path, "a", encoding="utf-8") as f:
            f.write(line.replace("\n", " ") + "\n")
    except OSError:
        return False
    return True


def report_note(line: str) -> bool:
    """Append ``line`` to the notes ``workbench report`` prints after the report's paths (what the report's
    first screen says a reader must not miss, e.g. a run it set aside); False (nothing written) outside it.

    A line that cannot be written is dropped, as for :func:`report_progress`.
    """
    return _append_line(NOTES_FILE_ENV, line)


@contextlib.contextmanager
def collecting_notes(path: str | Path) -> Iterator[list[str]]:
    """While the block runs, :func:`report_note` lines (this process's and its children's: a kernel started
    inside) go to ``path``; on exit the list yielded holds them, each once in the order first written, and
    the file is removed."""
    file = Path(path)
    previous = os.environ.get(NOTES_FILE_ENV)
    notes: list[str] = []
    file.unlink(missing_ok=True)
    os.environ[NOTES_FILE_ENV] = str(file)
    try:
        yield notes
    finally:
        if previous is None:
            os.environ.pop(NOTES_FILE_ENV, None)
        else:
            os.environ[NOTES_FILE_ENV] = previous
        with contextlib.suppress(OSError):
            notes.extend(dict.fromkeys(file.read_text(encoding="utf-8").splitlines()))
        file.unlink(missing_ok=True)


_EXECUTING = re.compile(r"^Executing Cell (\d+)-*$")
_ENDING = re.compile(r"^Ending Cell (\d+)-*$")
_QUIET = re.compile(r"^\s*(?:#|import\s|from\s\S+\s+import\s|$)")


def _telling_line(source: str, limit: int = 70) -> str:
    """The line of a cell that says what it does: its first assignment, else its first line that is
    not an import, comment or blank."""
    lines = [ln for ln in source.splitlines() if not _QUIET.match(ln)]
    line = next((ln for ln in lines if re.match(r"^\w[\w, ]*\s=\s", ln)), lines[0] if lines else "").strip()
    return line if len(line) <= limit else line[: limit - 3] + "..."


class CellWatch(logging.Handler):
    """Which cell papermill is executing, from its log records (``log_output=True``: "Executing Cell N").

    Attach it to the ``papermill`` logger; :meth:`due` then names a cell that has run for longer
    than ``after_s`` (once per cell), so a person sees what a long cell is doing and short cells
    stay quiet. Every other record (the cells' own output, which ``log_output`` also logs) is
    dropped here.

    Args:
        sources: the executed notebook's cells' sources, in order (papermill numbers them from 1);
            None for a cell that is never named (markdown).
        after_s: how long a cell runs before it is named (default 5 s).
        clock: seconds, monotonic (injectable for tests).
    """

    def __init__(self, sources: Sequence[str | None], *, after_s: float = 5.0, clock=time.monotonic) -> None:
        super().__init__(level=logging.INFO)
        self.sources, self.after_s, self.clock = list(sources), after_s, clock
        self._current: tuple[int, float] | None = None
        self._named: set[int] = set()
        self._lock = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        match = _EXECUTING.match(message)
        if match:
            with self._lock:
                self._current = (int(match.group(1)), self.clock())
        elif _ENDING.match(message):
            with self._lock:
                self._current = None

    def due(self) -> str | None:
        """``"cell 3/12 running for 5 s: runs = wb.benchmark_variants("`` once per long cell, else None."""
        with self._lock:
            if self._current is None:
                return None
            number, since = self._current
            elapsed = self.clock() - since
            source = self.sources[number - 1] if 0 < number <= len(self.sources) else None
            if source is None or number in self._named or elapsed < self.after_s:
                return None
            self._named.add(number)
        return f"cell {number}/{len(self.sources)} running for {elapsed:.0f} s: {_telling_line(source)}"


def executed_sources(cells: Sequence[Any]) -> list[str | None]:
    """The sources :class:`CellWatch` numbers, for a notebook papermill runs with parameters: its code
    cells' sources (None for other cells), with the cell papermill injects after the ``parameters``
    cell (papermill ``parameterize``: ``injected-parameters``, right after the tagged cell)."""
    out: list[str | None] = []
    for cell in cells:
        out.append(cell.source if cell.cell_type == "code" else None)
        if "parameters" in cell.get("metadata", {}).get("tags", []):
            out.append("# Parameters (injected by papermill)")
    return out


@contextlib.contextmanager
def progress_lines(
    path: str | Path, *, stream: TextIO | None = None, cells: CellWatch | None = None, prefix: str = "  "
) -> Iterator[None]:
    """While the block runs, :func:`report_progress` lines (this process's and its children's) go to ``stream``.

    Names ``path`` as the progress file in :data:`PROGRESS_FILE_ENV` (restored on exit) and
    tails it with a :class:`ProgressTail` (``stream``, ``cells``, ``prefix`` as there). ``workbench report``
    uses it around a notebook's kernel; ``workbench bench`` when its bars are off because stderr
    is not a terminal (:func:`progress_bars`).
    """
    previous = os.environ.get(PROGRESS_FILE_ENV)
    with ProgressTail(path, stream=stream, cells=cells, prefix=prefix):
        os.environ[PROGRESS_FILE_ENV] = str(path)
        try:
            yield
        finally:
            if previous is None:
                os.environ.pop(PROGRESS_FILE_ENV, None)
            else:
                os.environ[PROGRESS_FILE_ENV] = previous


class ProgressTail:
    """Print the lines appended to a progress file on a stream, from a background thread.

    Use as a context manager around the notebook's execution: on exit it prints what is
    left and stops. Lines are printed as ``<prefix><line>``.

    Args:
        path: the progress file (created empty; removed on exit).
        stream: where lines go (default ``sys.stderr``).
        prefix: put before each line (default two spaces).
        interval_s: how often the file is read (default 0.5 s).
        cells: a :class:`CellWatch` whose long-running cells are named as they run (optional).
    """

    def __init__(
        self,
        path: str | Path,
        *,
        stream: TextIO | None = None,
        prefix: str = "  ",
        interval_s: float = 0.5,
        cells: CellWatch | None = None,
    ) -> None:
        self.path = Path(path)
        self.cells = cells
        self.stream = stream if stream is not None else sys.stderr
        self.prefix = prefix
        self.interval_s = interval_s
        self._offset = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="workbench-progress-tail", daemon=True)

    def __enter__(self) -> ProgressTail:
        self.path.write_text("", encoding="utf-8")
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._drain()
        self.path.unlink(missing_ok=True)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._drain()
            named = self.cells.due() if self.cells is not None else None
            if named:
                self.stream.write(f"{self.prefix}{named}\n")
                self.stream.flush()

    def _drain(self) -> None:
        try:
            with open(self.path, "rb") as f:
                f.seek(self._offset)
                data = f.read()
        except OSError:
            return
        complete = data[: data.rfind(b"\n") + 1]  # a line still being written waits for the next read
        self._offset += len(complete)
        for line in complete.decode("utf-8", errors="replace").splitlines():
            self.stream.write(f"{self.prefix}{line}\n")
        if complete:
            self.stream.flush()
