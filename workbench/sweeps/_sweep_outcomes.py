"""What a sweep tells its caller about each variant: a failed server (:class:`SweepFailure`) and what a
run already held when it was opened (:class:`SweepResume`); :class:`PassFailed`, how a pass reports its
server's failure to the scheduler, and :func:`failure_of`, the classification of that failure."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from workbench.errors import BenchmarkError, ServerError, ServerStartError, WorkbenchError
from workbench.servers import classify_failure
from workbench.store import load_run

__all__ = ["PassFailed", "SweepFailure", "SweepResume", "failure_of"]


@dataclasses.dataclass(frozen=True)
class SweepFailure:
    """A variant whose server failed (to start, or mid-sweep); the sweep went on without it.

    Attributes:
        variant: its name.
        run: its run directory (the units measured before are kept).
        kind: the failure's class from the server log (``workbench.servers`` kinds:
            ``out_of_memory``, ``cuda_graph``, ..., ``unknown``).
        message: what went wrong, with the server log's tail.
        suggestion: what to do about it (the classification's advice; '' when none).
        measured: units (level x repeat) its run holds; 0 when the server failed before the first.
        log_path: the server's log file on its host ('' when no server was started).
        log_tail: the log's last lines as read when it failed ('' when none were read).
    """

    variant: str
    run: Path
    kind: str
    message: str
    suggestion: str = ""
    measured: int = 0
    log_path: str = ""
    log_tail: str = ""

    def log_lines(self, lines: int = 20) -> list[str]:
        """The log's path and its last ``lines`` lines, for a terminal below :meth:`line` (none without a log)."""
        if not self.log_path and not self.log_tail:
            return []
        tail = self.log_tail.splitlines()[-lines:]
        head = f"server log {self.log_path or '(path not recorded)'}" + (
            f", last {len(tail)} lines:" if tail else ": empty, nothing was logged"
        )
        return [head, *(f"  | {line}" for line in tail)]

    def line(self) -> str:
        """One line for a terminal: the variant, the failure's kind, what to do, and what its run keeps."""
        kept = (
            f"{self.measured} level(s) measured before it are kept in {self.run}; running the same sweep again "
            "resumes it"
            if self.measured
            else f"nothing was measured; its run {self.run} is marked failed (`workbench runs delete` removes it)"
        )
        return (
            f"{self.variant}: the server failed ({self.kind}): {self.suggestion or 'see its log tail in the run manifest'}"
            f" ({kept})"
        )


@dataclasses.dataclass(frozen=True)
class SweepResume:
    """What a variant's run held when :func:`benchmark_variants` opened it: the units it reuses.

    Attributes:
        variant: its name.
        run: its run directory.
        stored: (level, repeat) units already on disk, reused (0 for a new run or ``fresh``; for a new run of a
            sweep extended by levels, those copied from ``reused_from``).
        total: units of the plan (levels x repeats).
        repeats: the plan's repeats.
        reused_from: the stored run of the same sweep at other levels whose units a new run copied (manifest
            ``reused_levels``); None when none was copied.
    """

    variant: str
    run: Path
    stored: int
    total: int
    repeats: int
    reused_from: Path | None = None

    def line(self) -> str:
        """``"eagle3-topk4: 5 of 7 levels already on disk (run R), measuring 2"`` (with repeats > 1 the
        counts are of (level, repeat) units: ``"... of 14 levels x repeats ..."``; for a sweep extended by
        levels: ``"(run R, copied from run S: the same sweep at other levels)"``)."""
        what = "levels" if self.repeats == 1 else "levels x repeats"
        source = (
            f", copied from run {self.reused_from.name}: the same sweep at other levels"
            if self.reused_from is not None
            else ""
        )
        return (
            f"{self.variant}: {self.stored} of {self.total} {what} already on disk (run {self.run.name}{source}), "
            f"measuring {self.total - self.stored}"
        )


class PassFailed(Exception):
    """A pass's server failed: the run it wrote (marked failed) and the error (ServerError, BenchmarkError)."""

    def __init__(self, run: Path, error: ServerError | BenchmarkError) -> None:
        super().__init__(str(error))
        self.run, self.error = run, error


def failure_of(variant: str, run: Path, exc: ServerError | BenchmarkError) -> SweepFailure:
    """What a failed pass of ``variant`` leaves: its run and the classified error.

    The kind, suggestion and log tail are the error's own when it carries them (a :class:`ServerStartError`, or a
    :class:`BenchmarkError` raised for a server that died during a level), else classified from its message.
    """
    classified = classify_failure(str(exc))
    told_kind, told_suggestion, tail = (
        (exc.kind, exc.suggestion, exc.log_tail)
        if isinstance(exc, (ServerStartError, BenchmarkError))
        else (None, "", "")
    )
    kind = told_kind or classified.kind
    suggestion = told_suggestion or (classified.suggestion if classified.kind == kind else "")
    message = f"{type(exc).__name__}: {exc}" + (f"\nServer log tail:\n{tail}" if tail and tail not in str(exc) else "")
    try:
        manifest = load_run(run).manifest
    except WorkbenchError:
        manifest = {}
    return SweepFailure(
        variant=variant,
        run=run,
        kind=kind,
        message=message,
        suggestion=suggestion,
        measured=len(manifest.get("units_completed") or []),
        log_path=str(manifest.get("server_log") or ""),
        log_tail=tail,
    )
