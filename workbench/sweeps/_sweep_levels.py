"""A pass's level pipeline: each level a server measured is labelled, reported, then kept or failed.

:class:`LevelSink` is the sweep's ``on_level``; its three collaborators have one job each:
``_LevelLabels`` (the server's batch log lines and the launch's labels join the level), ``_LevelProgress``
(one line on ``workbench report``'s terminal) and ``_LevelKeeper``, the failure policy (a level whose
server stopped serving is kept apart as failed and stops the pass with a :class:`BenchmarkError` that
carries the failure's classification).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from workbench.bench import LevelResult, SweepPlan, add_log_series, add_request_columns
from workbench.errors import BenchmarkError, HostError, ServerError
from workbench.report import report_progress, reporting_progress
from workbench.servers import ServerHandle, classify_failure, server_died
from workbench.sweeps._run_sink import RunSink
from workbench.sweeps._sweep_prep import VariantSweep
from workbench.variants import PreparedLaunch

__all__ = ["LEVEL_LOG_LINES", "LevelSink", "STOPPING_GRACE_S"]

#: Server log lines read after each level for its batch lines (a level's window is a small part of them).
LEVEL_LOG_LINES = 5000


class LevelSink:
    """The sweep's ``on_level``: each level a server measured, labelled, reported, then kept (one step each,
    in this order; each step is its own collaborator)."""

    def __init__(
        self,
        sweep: VariantSweep,
        run: RunSink,
        server: ServerHandle,
        prep: PreparedLaunch,
        todo: Sequence[tuple[int, int]],
    ) -> None:
        self.labels = _LevelLabels(server, prep)
        self.progress = _LevelProgress(sweep, todo)
        self.keeper = _LevelKeeper(run, server, variant=sweep.variant.name, plan=sweep.plan)

    def __call__(self, level: LevelResult) -> None:
        level = self.labels(level)
        self.progress(level)
        self.keeper(level)


class _LevelLabels:
    """Labels a measured level: the server's batch log lines within the level's window join its observations
    (a log that cannot be read, because the host dropped, costs those lines only, never the level's rows),
    and the launch's labels (stand-in, effective settings) join its rows."""

    def __init__(self, server: ServerHandle, prep: PreparedLaunch) -> None:
        self.server, self.prep = server, prep

    def __call__(self, level: LevelResult) -> LevelResult:
        try:
            log_text = self.server.logs_tail(LEVEL_LOG_LINES)
        except (HostError, ServerError):
            log_text = ""
        return self.prep.label_level(add_log_series(level, log_text))


class _LevelProgress:
    """Reports a measured level: one line on ``workbench report``'s terminal (:func:`_progress_line`), with
    how many of the pass's units are done and the time since the pass began."""

    def __init__(self, sweep: VariantSweep, todo: Sequence[tuple[int, int]]) -> None:
        self.sweep, self.todo = sweep, list(todo)
        self.started = time.monotonic()

    def __call__(self, level: LevelResult) -> None:
        done = self.todo.index(level.unit) + 1 if level.unit in self.todo else None
        _progress_line(self.sweep, level, done=done, total=len(self.todo), elapsed_s=time.monotonic() - self.started)


class _LevelKeeper:
    """The failure policy: where a measured level goes in its run.

    Stored (:meth:`RunWriter.save_level <workbench.store.RunWriter.save_level>`) when no request failed,
    or when some failed while the server still serves (its processes run and it answers ``/server_info``:
    the failures were its answers). A level whose server stopped serving (killed by any signal, stopped by
    ``workbench servers --stop``, a scheduler or a host shutdown), or whose every request failed, is kept
    apart by :func:`_fail_level`, which stops the pass (BenchmarkError), so a re-run measures it again.
    """

    def __init__(self, run: RunSink, server: ServerHandle, *, variant: str, plan: SweepPlan) -> None:
        self.run, self.server, self.variant, self.plan = run, server, variant, plan

    def __call__(self, level: LevelResult) -> None:
        errors = level.requests["error"].notna() if len(level.requests) else None
        if errors is None or not errors.any():
            self.run.save_level(level)
            return
        serving = _still_serving(self.server)
        if serving and not errors.all():
            self.run.save_level(level)  # some requests failed; the server still serves
            return
        alive = serving or _still_running(self.server)
        _fail_level(
            self.run,
            level,
            self.server,
            alive=alive,
            serving=serving,
            variant=self.variant,
            label=self.plan.unit_label(level.unit),
        )


#: Seconds a server that stopped answering is given to exit before its level is judged (SIGTERM, then SIGKILL
#: after 15 s: ``workbench servers --stop``), so the log read for its cause is the whole of it.
STOPPING_GRACE_S = 20.0


def _still_serving(server: ServerHandle) -> bool:
    """True when ``server``'s processes run and it answers ``/server_info``.

    Its processes alone are not enough: a server sent SIGTERM (``workbench servers --stop``, a scheduler,
    a host shutdown) stops listening at once, so the requests still to send fail in a moment, while its
    processes take up to a second (the simulator) or longer (SGLang) to exit.
    """
    if not server.alive:
        return False
    try:
        server.server_info()
    except (ServerError, HostError):
        return False
    return True


def _still_running(
    server: ServerHandle,
    *,
    grace_s: float = STOPPING_GRACE_S,
    poll_s: float = 0.25,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> bool:
    """Whether a server that no longer answers still runs ``grace_s`` seconds on (False as soon as it is gone)."""
    deadline = clock() + grace_s
    while True:
        try:
            if not server.alive:
                return False
        except HostError:
            return False  # its host cannot say: judge it as gone (its level is failed either way)
        if clock() >= deadline:
            return True
        sleep(poll_s)


def _fail_level(
    run: RunSink,
    level: LevelResult,
    server: ServerHandle,
    *,
    alive: bool,
    variant: str,
    label: str,
    serving: bool = True,
) -> None:
    """Keep ``level`` apart as failed (not a measured unit) and stop the pass with a BenchmarkError.

    A level whose server died or stopped answering (or whose every request failed) measures
    no load as planned: its rows go to ``failed_levels.parquet`` with the server's state, the
    classification of its log and the log's tail (manifest ``failed_levels``), never to the
    charts; the sweep stops marching into further levels of that server. ``alive``: its
    processes still run; ``serving``: it still answers ``/server_info``.
    """
    tail = server.logs_tail(30)
    launch = server.launch_text  # the env and command: a tail that repeats neither is still classified
    failure = classify_failure(tail, launch=launch) if alive else server_died(tail, launch=launch)
    first_error = str(level.requests["error"].dropna().iloc[0])
    failed = int(level.requests["error"].notna().sum())
    state = ("still running" if serving else "still running but no longer answering") if alive else "no longer running"
    signal_note = (
        f"unknown (a signal: its log's last word is {failure.evidence!r})"
        if failure.evidence
        else "unknown (no error in its log: a signal such as SIGKILL)"
    )
    run.save_failed_level(
        level,
        {
            "label": label,
            "server_alive": alive,
            "server_serving": serving,
            "server_pid": server.process.pid,
            # a detached server is not our child: its exit status cannot be read, only inferred from its log
            "exit_signal": None
            if alive
            else (signal_note if failure.kind == "killed" else "unknown (it logged an error)"),
            "kind": failure.kind,
            "suggestion": failure.suggestion,
            "evidence": failure.evidence,
            "first_error": first_error,
            "log_tail": tail,
        },
    )
    counts = f"{failed} of {len(level.requests)} requests failed"
    what = (
        f"Every request of a level failed ({label})"
        if serving
        else f"The server of {variant!r} stopped answering during {label} ({counts})"
        if alive
        else f"The server of {variant!r} died during {label} ({counts})"
    )
    raise BenchmarkError(
        f"{what}: server {state}; its log is classified {failure.kind}: {failure.suggestion} First error: "
        f"{first_error}. That level is kept apart as failed (manifest failed_levels, failed_levels.parquet; "
        f"not charted) and no further level of this server is measured. Measured levels are kept in {run.path}; "
        f"running the same sweep again resumes it. Server log tail:\n{tail}",
        kind=failure.kind,
        log_tail=tail,
        suggestion=failure.suggestion,
    )  # read by failure_of


def _progress_line(sweep: VariantSweep, level: LevelResult, *, done: int | None, total: int, elapsed_s: float) -> None:
    """One line for the terminal of ``workbench report`` (nothing elsewhere): the level just measured."""
    if not reporting_progress():
        return
    plan = sweep.plan
    repeat = f" repeat {level.repeat + 1}/{plan.repeats}" if plan.repeats > 1 else ""
    count = f" ({done}/{total})" if done is not None else ""
    rows = add_request_columns(level.requests) if len(level.requests) else None
    per_request = float(rows["per_request_tok_s"].mean()) if rows is not None else float("nan")
    failed = int((~rows["ok"]).sum()) if rows is not None else 0
    report_progress(
        f"{sweep.variant.name}{repeat}: {plan.level_label(level.index)} done{count}: "
        f"{level.output_tok_s:.0f} output tok/s, {per_request:.1f} tok/s per request"
        f"{f', {failed} failed' if failed else ''}{' (simulated)' if sweep.engine.simulated else ''}"
        f" [{elapsed_s:.0f} s]"
    )
