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

import os
import sys
import threading
from pathlib import Path
from typing import TextIO

__all__ = ["PROGRESS_FILE_ENV", "ProgressTail", "report_progress", "reporting_progress"]

#: The environment variable that names the progress file of the notebook being run.
PROGRESS_FILE_ENV = "WORKBENCH_PROGRESS_FILE"


def reporting_progress() -> bool:
    """True inside a notebook run by ``workbench report`` (progress goes to its terminal as lines)."""
    return bool(os.environ.get(PROGRESS_FILE_ENV))


def report_progress(line: str) -> bool:
    """Append ``line`` to the progress file ``workbench report`` tails; False (nothing written) outside it.

    A line that cannot be written (the file's folder is gone) is dropped: progress never
    stops a measurement.
    """
    path = os.environ.get(PROGRESS_FILE_ENV)
    if not path:
        return False
    try:
        with open(path, "a", encoding="utf-8") as f:
            f.write(line.replace("\n", " ") + "\n")
    except OSError:
        return False
    return True


class ProgressTail:
    """Print the lines appended to a progress file on a stream, from a background thread.

    Use as a context manager around the notebook's execution: on exit it prints what is
    left and stops. Lines are printed as ``<prefix><line>``.

    Args:
        path: the progress file (created empty; removed on exit).
        stream: where lines go (default ``sys.stderr``).
        prefix: put before each line (default two spaces).
        interval_s: how often the file is read (default 0.5 s).
    """

    def __init__(self, path: str | Path, *, stream: TextIO | None = None, prefix: str = "  ",
                 interval_s: float = 0.5) -> None:
        self.path = Path(path)
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
