"""This machine as a :class:`Host` (the embedded default, ``host="local"``)."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from workbench.errors import HostError
from workbench.hosts._base import CommandResult, Host


class LocalHost(Host):
    """Runs commands with ``/bin/sh`` on this machine; files are local paths."""

    def __init__(self) -> None:
        self.name = "local"

    def _execute(self, command: str, *, timeout_s: float | None, stdin: bytes | None) -> CommandResult:
        start = time.monotonic()
        # Own session, so a timeout kills the whole pipeline, not only the shell.
        proc = subprocess.Popen(
            ["/bin/sh", "-c", command],
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        timed_out = False
        try:
            out, err = proc.communicate(stdin, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            try:
                os.killpg(proc.pid, 9)
            except ProcessLookupError:
                pass
            out, err = proc.communicate()
        return CommandResult(
            host=self.name,
            command=command,
            exit_status=proc.returncode,
            stdout=out.decode("utf-8", errors="replace"),
            stderr=err.decode("utf-8", errors="replace"),
            duration_s=time.monotonic() - start,
            timed_out=timed_out,
        )

    def read_bytes(self, path: str) -> bytes:
        try:
            return Path(path).expanduser().read_bytes()
        except OSError as exc:
            raise HostError(f"Cannot read {path} on host 'local': {exc.strerror}") from exc

    def write_bytes(self, path: str, data: bytes, *, mode: int = 0o644) -> None:
        target = Path(path).expanduser()
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(target.name + ".tmp")
            tmp.write_bytes(data)
            os.chmod(tmp, mode)
            os.replace(tmp, target)
        except OSError as exc:
            raise HostError(f"Cannot write {path} on host 'local': {exc.strerror}") from exc
