"""Which of a report's notebooks may run at once, and running those together in separate processes.

A notebook that measures in scaled real time (``spec_vs_baseline`` and ``dynamic_disable`` run
simulated servers at 8x real time) must have the CPU to itself, or its levels fall behind the
simulator's schedule and its figures come out low. The others (reading source, fitting a stored
table, checking variant files, offline predictions) only take as long as their CPU work: ``make
report`` starts them together, each in a process that gets the CPU only when nothing else wants it
(Linux ``SCHED_IDLE``), and meanwhile runs the measuring ones one at a time, which leave most of
the second core idle (a load generator and simulated servers waiting on their schedule). A notebook says it measures nothing in its metadata::

    "metadata": {"workbench_report": {"measures": false}, ...}

and every notebook that does not say so is taken to measure (it runs alone).

Each notebook run at once gets its own process (papermill changes the working directory of the
process that runs it, so two in one process would share it) and its own kernel, whose IPC sockets
are in a folder of their own (``workbench.report._kernel_run``).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import multiprocessing
import os
import signal
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import nbformat

__all__ = ["BESIDE_AT_ONCE", "MEASURES_KEY", "measures", "run_beside", "spare_cpu_only", "split_by_measuring"]

#: The notebook metadata key that holds ``{"measures": false}``.
MEASURES_KEY = "workbench_report"

#: At most this many notebooks that measure nothing run at once (four kernels of about 300 MB each
#: fit a 24 GB machine; on 2 cores four at once finish no later than two at once and even out
#: notebooks of unequal length: docs/PERFORMANCE.md).
BESIDE_AT_ONCE = 4


def measures(notebook: str | Path) -> bool:
    """False only when the notebook's metadata says ``workbench_report.measures: false``.

    Raises:
        ValueError: the notebook cannot be read as a notebook (nbformat's error).
    """
    meta = nbformat.read(str(notebook), as_version=4).metadata.get(MEASURES_KEY) or {}
    return not (isinstance(meta, Mapping) and meta.get("measures") is False)


def split_by_measuring(notebooks: Sequence[Path]) -> tuple[list[Path], list[Path]]:
    """``(beside, alone)``: the notebooks that measure nothing (run at once, when more than one) and the
    others (one at a time), each in the given order."""
    flags = {nb: measures(nb) for nb in notebooks}
    beside = [nb for nb in notebooks if not flags[nb]]
    alone = [nb for nb in notebooks if flags[nb]]
    if len(beside) < 2:  # one notebook gains nothing from a process of its own
        return [], list(notebooks)
    return beside, alone


def _context() -> Any:
    """fork where the platform has it (the children share the imported report machinery; nothing runs in
    another thread when they are forked), else spawn."""
    return multiprocessing.get_context("fork" if sys.platform.startswith("linux") else "spawn")


def spare_cpu_only() -> None:
    """Put this process (and what it starts: its kernel) on the CPU only when nothing else wants it.

    Linux ``SCHED_IDLE`` (sched(7)): a runnable task of any normal priority runs before it, at once on
    waking, so a measuring notebook's servers and load generator keep to their schedule while the
    notebooks that measure nothing use the cycles they leave. Elsewhere, the lowest nice value (19).
    The policy is inherited by child processes.
    """
    if hasattr(os, "sched_setscheduler") and hasattr(os, "SCHED_IDLE"):
        try:
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
            return
        except OSError:
            pass
    with contextlib.suppress(OSError):
        os.nice(19)


#: In a worker process: whether a notebook run is in progress there (what its SIGTERM handler stops).
_RUNNING = False


def _start_worker(spare_only: bool) -> None:
    """A worker process's start: Ctrl-C is the parent's to answer (:func:`run_beside`), so SIGINT is ignored
    here (a terminal sends it to every process of its foreground group, and a worker waiting for work
    printed ``Process ForkProcess-N: Traceback ... KeyboardInterrupt``); SIGTERM stops the notebook run in
    progress (:func:`_run_stoppably`) and is ignored between runs: a worker ended while it waits for work
    can die holding the pool's queue lock, which leaves the others waiting for ever. Then, with
    ``spare_only``, :func:`spare_cpu_only`."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _stop_run)
    if spare_only:
        spare_cpu_only()


def _stop_run(signum: int, frame: Any) -> None:
    if _RUNNING:
        raise KeyboardInterrupt


def _run_stoppably(run: Callable[[Path], Any], notebook: Path) -> Any:
    """``run(notebook)`` in a worker, where the parent's SIGTERM is a Ctrl-C of that run: the run's own
    interrupt handling stops its kernel (:func:`workbench.report._interrupt.run_interruptibly`), and the
    ``KeyboardInterrupt`` goes back to the parent as the run's outcome, printed nowhere."""
    global _RUNNING
    _RUNNING = True
    try:
        return run(notebook)
    finally:
        _RUNNING = False


def _stop_workers(pool: concurrent.futures.ProcessPoolExecutor) -> None:
    """Send SIGTERM to the pool's live workers: a notebook run in progress ends as on Ctrl-C; a worker
    waiting for work ignores it and ends on the pool's shutdown."""
    for process in list((getattr(pool, "_processes", None) or {}).values()):  # CPython's pool keeps them there
        if process.is_alive() and process.pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, signal.SIGTERM)


@contextlib.contextmanager
def run_beside(
    notebooks: Sequence[Path], run: Callable[[Path], Any], *, at_once: int = BESIDE_AT_ONCE, spare_only: bool = True
) -> Iterator[Callable[[], Iterator[tuple[Path, Any, BaseException | None]]]]:
    """Start ``run(notebook)`` for each notebook, up to ``at_once`` at a time, each in a process of its own.

    Use as ``with run_beside(books, run) as finished: <run the measuring notebooks here>``, then
    ``for notebook, result, error in finished(): ...``: the processes start when the block is entered
    and work while it runs; leaving the block waits for them.

    Args:
        notebooks: the notebooks (all of them measure nothing: :func:`split_by_measuring`).
        run: a module-level function (it is pickled by name) called in the child with one notebook;
            what it returns (picklable) comes back.
        at_once: the most processes at a time (default :data:`BESIDE_AT_ONCE`).
        spare_only: run them on spare CPU only (:func:`spare_cpu_only`; default True), so that notebooks
            measuring in the parent at the same time keep the CPU they need.

    Yields:
        A function whose iterator gives ``(notebook, result, None)`` or ``(notebook, None, error)`` for each,
        as each finishes; an error raised in a child (a ReportError, a ConfigError) comes back as the
        exception itself.

    Ctrl-C: the workers ignore SIGINT; when the block (or the iteration) ends in an exception, such as the
    parent's ``KeyboardInterrupt``, each worker is sent SIGTERM (a running notebook stops its kernel as on
    Ctrl-C), the runs not started are cancelled, and the exception goes on once the workers have ended.
    Nothing of theirs is printed.
    """
    pool = concurrent.futures.ProcessPoolExecutor(
        max_workers=max(1, min(at_once, len(notebooks))),
        mp_context=_context(),
        initializer=_start_worker,
        initargs=(spare_only,),
    )
    try:
        futures = {pool.submit(_run_stoppably, run, nb): nb for nb in notebooks}

        def finished() -> Iterator[tuple[Path, Any, BaseException | None]]:
            for future in concurrent.futures.as_completed(futures):
                error = future.exception()
                yield futures[future], (None if error is not None else future.result()), error

        yield finished
    except BaseException:
        _stop_workers(pool)
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    finally:
        pool.shutdown(wait=True)
