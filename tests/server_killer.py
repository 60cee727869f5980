"""Kill a sweep's server (``kill -9`` of its process group) from a watcher thread, at a chosen moment.

The moment is read from the run manifests under a runs folder, as the sweep writes them:
``when(manifest)`` is asked for each manifest every ``poll_s`` seconds; the first one it accepts
has its recorded ``server_process`` group killed (after ``delay_s``).
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _kill9(manifest: dict[str, Any]) -> None:
    os.killpg(manifest["server_process"]["pgid"], signal.SIGKILL)


class ServerKiller:
    """The watcher thread; ``pgid`` is the group it acted on (None until then), ``acted`` that manifest and
    ``outcome`` what ``act`` returned. ``act`` (default: ``kill -9`` of the server's group) may signal or stop
    the server any other way."""

    def __init__(
        self,
        runs: Path,
        when: Callable[[dict[str, Any]], bool],
        *,
        delay_s: float = 0.0,
        poll_s: float = 0.02,
        timeout_s: float = 60.0,
        act: Callable[[dict[str, Any]], Any] = _kill9,
    ) -> None:
        self.runs, self.when, self.delay_s, self.poll_s, self.timeout_s = runs, when, delay_s, poll_s, timeout_s
        self.act = act
        self.pgid: int | None = None
        self.acted: dict[str, Any] | None = None
        self.outcome: Any = None
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()

    def _watch(self) -> None:
        deadline = time.monotonic() + self.timeout_s
        while time.monotonic() < deadline:
            for path in sorted(self.runs.glob("*/manifest.json")):
                try:
                    manifest = json.loads(path.read_text())
                except (OSError, ValueError):
                    continue  # being replaced right now
                if manifest.get("server_process") and self.when(manifest):
                    time.sleep(self.delay_s)
                    self.pgid, self.acted = manifest["server_process"]["pgid"], manifest
                    self.outcome = self.act(manifest)
                    return
            time.sleep(self.poll_s)

    def join(self, timeout_s: float = 30.0) -> None:
        self.thread.join(timeout_s)


def running_under(folder: Path) -> list[str]:
    """Command lines of live (not zombie) processes that name ``folder``: servers, watchdogs and load generators
    a test started with its files there, which must all be gone when it ends."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[-1].split()[0]
        except OSError:
            continue
        if str(folder) in cmdline and state != "Z":
            found.append(f"{entry.name}: {cmdline[:200]}")
    return found


def kill_when_stored(proc: Any, runs: Path, units: int, *, timeout_s: float = 120.0) -> dict[str, Any]:
    """``kill -9`` the sweep process ``proc`` (a :class:`subprocess.Popen`) once a run under ``runs`` stores
    ``units`` units; returns that run's manifest as it was then.

    Raises:
        AssertionError: the sweep exited first (its stderr quoted), or the units never came.
    """
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for path in sorted(runs.glob("*/manifest.json")):
            try:
                manifest = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            if len(manifest.get("units_completed") or []) >= units:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(10)
                return json.loads(path.read_text())
        assert proc.poll() is None, proc.stderr.read().decode()
        time.sleep(0.02)
    raise AssertionError(f"no run under {runs} stored {units} units within {timeout_s:g} s")
