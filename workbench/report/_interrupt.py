"""Ctrl-C of a notebook run: the running cell is interrupted, its kernel stopped, then the interrupt goes on.

nbclient (0.10) answers SIGINT on its own event loop by asking the kernel to shut down gracefully, and
that request waits for the cell in progress: a ``workbench report`` whose cell sleeps for two minutes
went on for the two minutes after Ctrl-C, then wrote the report as if nothing had happened. Here the
notebook runs in a worker thread (where nbclient installs no signal handler) while the calling thread
waits; on Ctrl-C this module

1. interrupts every kernel the run started (SIGINT to the kernel's process group, as JupyterLab's
   interrupt button does), so the cell gets its own ``KeyboardInterrupt`` and its ``with`` blocks stop
   the servers it started;
2. waits up to :data:`INTERRUPT_GRACE_S` for the run to end (a second Ctrl-C skips the wait);
3. kills what is left of each kernel's process group (SIGKILL), and
4. raises ``KeyboardInterrupt`` in the caller, whose command-line layer prints one line and exits 130.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["INTERRUPT_GRACE_S", "KernelProcesses", "run_interruptibly"]

T = TypeVar("T")

#: Seconds a Ctrl-C'd cell is given to finish its ``with`` blocks (stop its servers) before its kernel is killed.
INTERRUPT_GRACE_S = 10.0


class KernelProcesses:
    """The kernel processes a run started (thread-safe); each was started in a session of its own.

    jupyter_client (8.x) starts a local kernel with ``start_new_session=True``, so the kernel's pid is
    its process group's id and a signal to the group reaches the kernel and what it started there.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._processes: list[subprocess.Popen[Any]] = []

    def add(self, process: Any) -> None:
        """Record a kernel's ``subprocess.Popen`` (anything else, such as None from a remote provisioner, is ignored)."""
        if isinstance(process, subprocess.Popen):
            with self._lock:
                self._processes.append(process)

    def pids(self) -> set[int]:
        """The process ids of every kernel recorded (running or not)."""
        with self._lock:
            return {p.pid for p in self._processes}

    def signal_all(self, signum: int) -> None:
        """Send ``signum`` to the process group of every recorded kernel still running."""
        with self._lock:
            running = [p for p in self._processes if p.poll() is None]
        for process in running:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signum)


def run_interruptibly(call: Callable[[], T], kernels: KernelProcesses, *, grace_s: float = INTERRUPT_GRACE_S) -> T:
    """Return ``call()``, run in a worker thread so that Ctrl-C in this thread stops its kernels (module doc).

    Outside the main thread (no signal reaches it) ``call`` simply runs here.

    Raises:
        KeyboardInterrupt: on Ctrl-C, once the kernels are interrupted and then killed.
        BaseException: whatever ``call`` raised, unchanged.
    """
    if threading.current_thread() is not threading.main_thread():
        return call()
    outcome: dict[str, Any] = {}
    done = (
        threading.Event()
    )  # not Thread.join: a join that Ctrl-C interrupted may report the thread ended (CPython gh-90882)

    def target() -> None:
        try:
            outcome["value"] = call()
        except BaseException as exc:  # handed to the caller's thread below
            outcome["error"] = exc
        finally:
            done.set()

    threading.Thread(target=target, name="workbench-notebook", daemon=True).start()
    try:
        while not done.wait(0.2):  # a timed wait lets the main thread take the KeyboardInterrupt
            pass
    except KeyboardInterrupt:
        kernels.signal_all(signal.SIGINT)
        with contextlib.suppress(KeyboardInterrupt):  # a second Ctrl-C: no more waiting
            done.wait(grace_s)
        kernels.signal_all(signal.SIGKILL)
        with contextlib.suppress(KeyboardInterrupt):
            done.wait(grace_s)  # nbclient sees the dead kernel within about a second and returns
        raise
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]
